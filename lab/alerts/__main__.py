"""`python -m lab.alerts`: print the Prometheus rules file generated from the lab's rules."""

from __future__ import annotations

import sys

from lab.alerts.promfile import default_groups, render_rules

if __name__ == "__main__":
    sys.stdout.write(render_rules(default_groups()))
