"""Bundled stdio MCP servers for kcp: ``socialweb-computer-kcp-readonly`` and ``-readwrite``.

Modules: ``kubectl`` (binary resolution, async runner, argv builders), ``discovery`` (kubeconfig
facts, kcp targets, the optional-``kcp`` rule), ``resources`` (API discovery documents to
resource rows), ``service`` (the operations behind every tool), ``descriptions`` (tool texts
with code-mode examples), ``server`` (the MCP servers and their CLI entry points).
"""
