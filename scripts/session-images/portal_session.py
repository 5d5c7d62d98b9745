"""A Jupyter server extension of the session images: the app token stays out of the browser.

JupyterLab writes its server's token into every page it serves (the page config's "token"),
for its front end to send back. Behind the portal's session proxy the front end needs none: the
proxy adds "Authorization: token ..." to every request and WebSocket it forwards. A token in the
page would let anyone the session is shared with reach the container's port directly (from a
job of their own on the same bridge network) even after the share is withdrawn. JupyterHub
blanks it the same way. Named to load after jupyterlab (server extensions load in name order),
whose own load writes the token.
"""


def _jupyter_server_extension_points():
    return [{"module": "portal_session"}]


def _load_jupyter_server_extension(serverapp):
    page_config = serverapp.web_app.settings.setdefault("page_config_data", {})
    page_config["token"] = ""
