"""The per-node view of a run: a fold of its log, in storage/log_fold.py with the other folds."""

from __future__ import annotations

from flowdeck.storage.log_fold import GraphShape, NodeView, fold_nodes

__all__ = ("GraphShape", "NodeView", "fold_nodes")
