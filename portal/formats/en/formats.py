"""24-hour ISO-style dates for every English page, the admin included (FORMAT_MODULE_PATH):
``2026-11-22 14:05 CET`` instead of "Nov. 22, 2026, 2:05 p.m."; ``T`` is the active zone's
abbreviation (accounts.timezones activates the user's zone per request)."""

DATE_FORMAT = "Y-m-d"
TIME_FORMAT = "H:i"
DATETIME_FORMAT = "Y-m-d H:i T"
SHORT_DATE_FORMAT = "Y-m-d"
SHORT_DATETIME_FORMAT = "Y-m-d H:i T"
MONTH_DAY_FORMAT = "F j"
YEAR_MONTH_FORMAT = "F Y"
DATE_INPUT_FORMATS = ["%Y-%m-%d"]
TIME_INPUT_FORMATS = ["%H:%M:%S", "%H:%M"]
DATETIME_INPUT_FORMATS = [
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%d %H:%M",
    "%Y-%m-%dT%H:%M:%S",
    "%Y-%m-%dT%H:%M",
]
FIRST_DAY_OF_WEEK = 1  # Monday
DECIMAL_SEPARATOR = "."
THOUSAND_SEPARATOR = ","
NUMBER_GROUPING = 3
