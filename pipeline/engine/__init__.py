"""Execution: the plan of a run, its task functions, and the engines that run them.

The engines (in-process or on Ray) sit behind one small interface,
:class:`pipeline.engine.base.Runner`.
"""

from pipeline.engine.plan import Plan, make_plan
from pipeline.engine.run import (
    Execution,
    aggregate_examples,
    choose_engine,
    execute,
    make_runner,
)

__all__ = ["Execution", "Plan", "aggregate_examples", "choose_engine", "execute", "make_plan",
           "make_runner"]
