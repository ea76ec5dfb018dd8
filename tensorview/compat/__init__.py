"""Other tools' APIs on tensorview's recording: torchview's node objects and graph
attributes (``nodes``, ``graph_api``), how torchview reads ``draw_graph``'s arguments
(``options``) and its ``collect_attributes`` probe (``attributes``).  Nothing here changes
what tensorview records or draws; ``tensorview.torchview`` gathers it under torchview's
names (docs/migrating.md)."""
