"""Mutated lit inputs of the graph, tm and tmgpu dialects through ``tm-opt`` (in-process):
exit status 0 or 1, never a traceback, and an error is one short diagnostic.

The normal suite runs 40 seeded mutants; ``-m slow`` 3000. Mutants of the dominance class
(``ssa_later``: a use before its definition, ``%y = op %y``) are expected to fail until
tm-opt verifies SSA dominance: they are marked xfail when they fail (not counted as passes).
"""

from __future__ import annotations

import random
from collections import Counter

import pytest
from fuzz_ir_mutants import DOMINANCE, MUTATIONS, check_result, lit_cases, mutate, run_tm_opt

CASES = lit_cases()


def seeded_mutants(count: int, seed: int):
    """`count` mutants, spread evenly over the mutation classes, from `seed`."""
    rng = random.Random(seed)
    mutants = []
    while len(mutants) < count:
        mutation = MUTATIONS[len(mutants) % len(MUTATIONS)]
        mutant = mutate(rng.choice(CASES), mutation, rng.randrange(2**32))
        if mutant is not None:
            mutants.append(mutant)
    return mutants


def test_lit_inputs_are_found_and_parse():
    """The mutants' sources: every dialect has cases, and unmutated ones pass tm-opt."""
    files = {case.file.split("/")[1] for case in CASES if case.file.startswith("dialects/")}
    assert {"graph", "tm", "tmgpu"} <= files
    ops = next(case for case in CASES if case.file == "dialects/graph/ops.mlir")
    assert run_tm_opt(ops.text).status == 0


@pytest.mark.parametrize("mutant", seeded_mutants(40, seed=15), ids=lambda m: f"{m.case.label}-{m.mutation}")
def test_mutant_gives_one_diagnostic_or_none(mutant):
    problem = check_result(run_tm_opt(mutant.text, mutant.case.passes))
    if problem and mutant.mutation in DOMINANCE:
        pytest.xfail(f"no SSA dominance check yet: {problem}")
    assert problem is None, f"{mutant.case.label} ({mutant.mutation}): {problem}\n{mutant.text}"


@pytest.mark.slow
def test_many_mutants_give_one_diagnostic_or_none():
    tally: Counter[str] = Counter()
    failures = []
    seed = random.randrange(2**32)  # a new sample each run; a failure names its seed
    for mutant in seeded_mutants(3000, seed=seed):
        problem = check_result(run_tm_opt(mutant.text, mutant.case.passes))
        tally[f"{mutant.mutation}:{'fail' if problem else 'ok'}"] += 1
        if problem and mutant.mutation not in DOMINANCE:
            failures.append(f"{mutant.case.label} ({mutant.mutation}): {problem}\n{mutant.text}")
    print(dict(sorted(tally.items())))
    assert not failures, f"{len(failures)} mutants of seed {seed} failed; the first:\n{failures[0]}"
