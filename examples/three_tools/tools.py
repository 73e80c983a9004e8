"""The three tools of the restaurant assistant: weather, restaurant search, booking (approved by a person).

Serve them with `agentloop dev --tools examples/three_tools/tools.py` (one process) or
`agentloop serve tools --tools examples.three_tools.tools` (the production layout).
"""

from __future__ import annotations

from agentloop.tools import tool

FORECASTS = {"oslo": "light snow, -2 °C", "lisbon": "sunny, 19 °C"}
RESTAURANTS = {"oslo": ["Maaemo", "Kontrast"], "lisbon": ["Belcanto", "Prado"]}


@tool
def get_weather(city: str) -> str:
    """Today's weather in a city.

    Args:
        city: the city's name, for example "Oslo".
    """
    return FORECASTS.get(city.lower(), "unknown")


@tool
def find_restaurants(city: str, party: int = 2) -> list[str]:
    """Restaurants in a city with a table for the party.

    Args:
        city: the city's name.
        party: how many people.
    """
    return RESTAURANTS.get(city.lower(), [])[: max(1, 6 - party)]


@tool(requires_approval=True)
def book_table(restaurant: str, time: str, party: int = 2) -> str:
    """Book a table. A person approves every booking before it is made.

    Args:
        restaurant: the restaurant's name, as find_restaurants returned it.
        time: when, for example "19:30".
        party: how many people.
    """
    return f"booked {restaurant} at {time} for {party}"
