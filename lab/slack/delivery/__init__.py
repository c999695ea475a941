"""Delivery to the app: Socket Mode envelopes or signed HTTP requests, acks, retries."""
