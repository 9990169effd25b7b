"""Task graphs: nodes, validation and the parallel runtime."""

from saber.graph.node import Node, NodeStatus, NodeType
from saber.graph.taskgraph import GraphError, TaskGraph

__all__ = ["GraphError", "Node", "NodeStatus", "NodeType", "TaskGraph"]
