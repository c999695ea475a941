"""The Slack surface and process wiring: the only package that knows Slack."""
