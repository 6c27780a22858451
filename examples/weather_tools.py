"""An example module of Python tools, named in the configuration as `python_tools = ["examples.weather_tools"]`."""

from __future__ import annotations

import asyncio

from approvals_tools import tool

_FORECASTS = {"paris": "mild, light rain", "oslo": "cold, clear skies", "lima": "warm, overcast"}


@tool(permission="read", rule_argument="city")
def forecast(city: str, days: int = 1) -> str:
    """Tell the weather forecast for a city (from a small built-in table; no network).

    Args:
        city: the city's name, e.g. Paris
        days: how many days ahead, 1 to 7
    """
    if not 1 <= days <= 7:
        raise ValueError("days must be between 1 and 7")
    outlook = _FORECASTS.get(city.lower(), "no forecast known")
    return f"{city}, next {days} day(s): {outlook}"


@tool(permission="write", rule_argument="city", timeout_seconds=30)
async def report_weather(city: str, observation: str) -> dict[str, str]:
    """Record an observation for a city; other tools read it back from the forecast table.

    Args:
        city: the city the observation is for
        observation: what the weather is like now
    """
    await asyncio.sleep(0)
    _FORECASTS[city.lower()] = observation
    return {"city": city, "recorded": observation}
