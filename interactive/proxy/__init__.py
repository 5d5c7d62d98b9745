"""The session proxy: its own process and origin in front of every interactive session.

``manage.py session_proxy`` serves :mod:`interactive.proxy.gateway` under uvicorn. The HTTP and
WebSocket forwarding is asgiproxy's (aiohttp underneath); this package is the portal's wrapper
around it: the sign-in hand-off, the per-request access check, the header rules (what reaches
the app, what reaches the browser), activity for the idle rule, and the bounds (docs/sessions.md,
"The proxy").
"""
