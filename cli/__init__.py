"""The command line behind `python starter.py`: one module per concern, heavy imports kept lazy.

Commands that only read the projection (`pending`, `conversations`) never import the Temporal
client, so they stay fast and work while Temporal or every worker is down.
"""
