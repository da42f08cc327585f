"""schedule: the pure compile step — tiles, fill sequences, segments, closed-form counts."""

from cyclesim.schedule.counts import Access, closed_form
from cyclesim.schedule.plan import NodePlan, Plan, ReusePolicy, build_plan

__all__ = ["Access", "closed_form", "NodePlan", "Plan", "ReusePolicy", "build_plan"]
