"""State stores: where REPLs are saved so a conversation keeps its variables across processes."""
