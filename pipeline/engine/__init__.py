"""Execution: the plan of a run, the task functions, and the engines that run them
(in-process or on Ray) behind one small interface (:class:`pipeline.engine.base.Runner`)."""

from pipeline.engine.plan import Plan, make_plan
from pipeline.engine.run import Execution, execute, make_runner

__all__ = ["Execution", "Plan", "execute", "make_plan", "make_runner"]
