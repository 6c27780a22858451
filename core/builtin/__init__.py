"""The built-in tools, one module each: its spec, the capabilities the rest reads, and its code.

The shape every definition has is core/builtin/tool.py; the registry that lists them is
core/tool_specs.py. Importing a definition is pure: its code imports activity helpers only when
it runs, in the tool activity.
"""
