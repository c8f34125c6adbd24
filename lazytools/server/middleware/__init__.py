"""The server's middleware: one `ServerMiddleware` a module, each with one `__call__` around every request."""
