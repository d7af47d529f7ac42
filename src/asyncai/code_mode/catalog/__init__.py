"""The catalog: which functions a snippet can call, how they are described to the model, and how
the model finds one among thousands (``search_tools``, ``describe_tool``)."""
