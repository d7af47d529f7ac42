"""The ``asyncai`` command line: the agent (``-p``, chat, ``--jsonl``), ``tools`` and ``run-code``."""
