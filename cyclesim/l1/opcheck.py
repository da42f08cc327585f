"""Checks of op bodies: every alloc, free and call makes sense; no call cycles."""

from __future__ import annotations

from typing import Any

from cyclesim.l1.opspec import OpSpec, OutputOwner, StepKind


def check_body(
    op: OpSpec, library: dict[str, OpSpec], loc: tuple, err: Any, is_model: bool
) -> None:
    """Walk the body once with a set of live tensors: every alloc, free and call must make sense.

    Over 80 lines: one walk over the body with one set of live tensors; each statement kind
    (alloc, free, call, circular buffer) is a short branch of it.
    """
    what = "the model" if is_model else f"op '{op.name}'"
    tensors_key = "tensors" if is_model else "intermediates"
    inter = {t.name for t in op.intermediates}
    outputs = {t.name: t for t in op.outputs}
    cb_names = {c.name for c in op.circular_buffers}
    known = sorted(inter | set(outputs))
    live = {n for n, t in outputs.items() if t.allocated_by is OutputOwner.CALLER}
    produced: set[str] = set()  # op-allocated outputs already handed over
    ran = False
    for index, step in enumerate(op.steps):
        where = loc + ("steps", index)
        if step.kind is StepKind.RUN:
            if is_model:
                raise err("the model has no program to run; call an op instead", where, found="run")
            ran = True
            continue
        if step.kind is StepKind.CALL:
            _check_call(op, step, library, live, produced, where, err, known)
            continue
        name = step.target
        verb = step.kind.value
        if name in cb_names:
            raise err(
                f"'{name}' is a circular buffer; they come and go with 'run'",
                where + (verb,),
                found=name,
            )
        if name not in inter and name not in outputs:
            raise err(
                f"{verb} of an unknown tensor in {what}",
                where + (verb,),
                found=name,
                expected=f"one of {known}" if known else f"a tensor declared in {tensors_key}",
            )
        if step.kind is StepKind.ALLOC:
            if name in outputs and outputs[name].allocated_by is OutputOwner.CALLER:
                raise err(
                    f"output '{name}' is preallocated by the caller; {what} cannot allocate it",
                    where + (verb,),
                    found=name,
                    expected="allocated_by: op on the output, or no alloc step",
                )
            if name in live:
                raise err(f"tensor '{name}' is already allocated", where + (verb,), found=name)
            if name in produced:
                raise err(f"output '{name}' is allocated twice", where + (verb,), found=name)
            live.add(name)
            if name in outputs:
                produced.add(name)
        else:
            if name in outputs:
                raise err(
                    f"'{name}' is an output of {what}: it outlives the op and its caller frees it",
                    where + (verb,),
                    found=name,
                )
            if name not in live:
                raise err(
                    f"free of tensor '{name}', which is not allocated here",
                    where + (verb,),
                    found=name,
                )
            live.discard(name)
    if op.circular_buffers and not ran:
        raise err(f"{what} declares circular buffers but its steps never 'run'", loc + ("steps",))
    if not is_model:
        leaked = sorted(live & inter)
        if leaked:
            raise err(
                f"intermediates of {what} are never freed",
                loc + ("steps",),
                found=leaked,
                expected="a {free: NAME} step for each before the op returns",
            )
        missing = sorted(
            n for n, t in outputs.items() if t.allocated_by is OutputOwner.OP and n not in live
        )
        if missing:
            raise err(
                f"outputs of {what} with allocated_by: op are never allocated",
                loc + ("steps",),
                found=missing,
                expected="an {alloc: NAME} step, or a call that produces them",
            )


def _check_call(op, step, library, live, produced, where, err, known) -> None:
    callee = library.get(step.target)
    if callee is None:
        raise err(
            "call of an unknown op",
            where + ("call",),
            found=step.target,
            expected=f"one of {sorted(library)}",
        )
    bindings = dict(step.bindings)
    callee_outputs = {t.name: t for t in callee.outputs}
    for out_name in bindings:
        if out_name not in callee_outputs:
            raise err(
                f"op '{callee.name}' has no output '{out_name}'",
                where + ("outputs", out_name),
                found=out_name,
                expected=f"one of {sorted(callee_outputs)}",
            )
    used: set[str] = set()
    for out in callee.outputs:
        local = bindings.get(out.name, out.name)
        loc = where + ("outputs", out.name) if out.name in bindings else where + ("call",)
        mine = op.tensor(local)
        if mine is None:
            raise err(
                f"output '{out.name}' of '{callee.name}' is bound to an unknown tensor",
                loc,
                found=local,
                expected=f"one of {known}" if known else "a declared tensor",
            )
        if local in used:
            raise err(f"tensor '{local}' is bound to two outputs of one call", loc, found=local)
        used.add(local)
        if (mine.size_bytes, mine.page_size_bytes, mine.num_banks) != (
            out.size_bytes,
            out.page_size_bytes,
            out.num_banks,
        ):
            raise err(
                f"tensor '{local}' does not match output '{out.name}' of '{callee.name}'",
                loc,
                found=(mine.size_bytes, mine.page_size_bytes, mine.num_banks),
                expected=f"(size_bytes, page_size_bytes, num_banks) = "
                f"{(out.size_bytes, out.page_size_bytes, out.num_banks)}",
            )
        if out.allocated_by is OutputOwner.CALLER and local not in live:
            raise err(
                f"'{callee.name}' expects its output '{out.name}' preallocated, but '{local}' is not allocated",
                loc,
                found=local,
                expected=f"an {{alloc: {local}}} step before the call",
            )
        if out.allocated_by is OutputOwner.OP:
            if local in live:
                raise err(
                    f"'{callee.name}' allocates its output '{out.name}', but '{local}' is already allocated",
                    loc,
                    found=local,
                )
            live.add(local)
            if op.tensor(local) in op.outputs:
                produced.add(local)


def check_cycles(ops: tuple[OpSpec, ...], library: dict[str, OpSpec], errs: dict[str, Any]) -> None:
    """No op may call itself, directly or through others."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for index, step in enumerate(library[name].steps):
            if step.kind is not StepKind.CALL:
                continue
            if state.get(step.target) == 1:
                cycle = path[path.index(step.target) :] + [step.target]
                raise errs[name](
                    "call cycle: " + " -> ".join(cycle),
                    ("ops", name, "steps", index, "call"),
                    found=step.target,
                    expected="an acyclic call graph (ops cannot recurse)",
                )
            if state.get(step.target) is None:
                visit(step.target, path + [step.target])
        state[name] = 2

    for op in ops:
        if op.name not in state:
            visit(op.name, [op.name])
