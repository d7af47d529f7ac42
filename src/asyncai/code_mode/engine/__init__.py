"""The engine: one REPL per scope (``scope``), and each snippet taken through four stages in the
order it travels: ``read`` it, ``plan`` how it runs, ``run`` it on a sandbox worker with its nested
calls dispatched to the tool sources, and ``finish`` what comes back into the text the model reads."""
