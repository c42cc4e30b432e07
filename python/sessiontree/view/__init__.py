"""How sessions are shown: the layer between the core and the viewers (``tree``,
``context``, ``browse``, the HTML and Markdown exports)."""
