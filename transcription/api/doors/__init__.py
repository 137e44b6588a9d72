"""The doors: REST views and urls, MCP, uploads (tus), the OpenAI door, the poll fast lane, ASGI."""
