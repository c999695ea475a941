"""The Web API stand-in: one module per method family, and the endpoint that serves them."""
