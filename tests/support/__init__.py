"""Test-support stand-ins shared by test packages (local servers on 127.0.0.1, port 0)."""
