"""The App Home tab (DESIGN section 7): open incidents, approvals waiting for the viewer,
recent transactions with Undo.

    register_home(app, services)        # services: bot.services.Services
"""

from bot.home.content import HomeContent, home_content
from bot.home.listener import HomePublisher, register_home
from bot.home.render import HomeAction, render_home

__all__ = [
    "HomeAction",
    "HomeContent",
    "HomePublisher",
    "home_content",
    "register_home",
    "render_home",
]
