"""The HTTP face of the emulated API server (aiohttp): routing, discovery, content
negotiation, Table printing, watches, and the background thread that serves it."""
