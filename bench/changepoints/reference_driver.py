#!/usr/bin/env python3
"""Run the reference implementation of Muehlbauer et al. (ASE 2020) on a synthetic
system given from outside, so that knobs and the reference see the SAME system.

Usage:
  driver.py REF_DIR SYSTEM.json [--seed S] [--budget M] [--max-iter I]
            [--initial-configs N] [--commit-rate R] [--threshold T]
            [--init-sampling distance|reference] [--cv K] [--trace] [--slow-queries]
  driver.py REF_DIR --generate N_COMMITS N_OPTIONS N_CPS P_INTERACTION P_DEGREE COV SEED
            (prints a SYSTEM.json drawn with the reference's own Synthesizer)

REF_DIR is the directory holding change_point_identification.py (or the file itself).
Command-line options override the "params" object of SYSTEM.json.
Output: one JSON object on stdout; everything the reference prints goes to stderr.

System JSON (format "knobs-cp-system/1"):
  n_options, n_commits           ints; options are 0..n_options-1, commits 0..n_commits-1
  terms: [{"options": [..], "influence": x}]   influence at commit 0; [] = base (core)
  change_points: [{"commit": t, "options": [..], "delta": d}]
      the term's influence is increased by d for every commit >= t
      (perf(t) differs from perf(t-1)); [] = change of the base, i.e. all configurations
  noise: {"relative_sd": s}      measurement = perf + Normal(0, (s*perf)^2) (reference's cov)
  params (optional): seed, measurements_per_iteration, max_iterations,
      n_initial_configs, commit_rate, threshold
Ground truth association = (commit, option) for every option of a change point's set,
(commit, -1) for an empty set (this is the reference's own scoring unit).
"""
import argparse
import contextlib
import functools
import importlib.util
import json
import os
import random
import sys
import time
import types

import numpy as np
import pandas as pd


def load_reference(path):
    if os.path.isdir(path):
        path = os.path.join(path, "change_point_identification.py")
    spec = importlib.util.spec_from_file_location("change_point_identification", path)
    mod = importlib.util.module_from_spec(spec)
    with contextlib.redirect_stdout(sys.stderr):
        spec.loader.exec_module(mod)
    return mod


# ---------------------------------------------------------------- system <-> reference

def build_synthesizer(ref, system):
    """Builds an object the reference's ChangePointLearner accepts (a Synthesizer whose
    term_matrix / influences / changepoints / terms come from the JSON)."""
    n_options, n_commits = int(system["n_options"]), int(system["n_commits"])
    index = {}          # option set -> term index
    base = []
    def term_of(opts):
        key = tuple(sorted(int(o) for o in opts))
        if key not in index:
            index[key] = len(base)
            base.append(0.0)
        return index[key]
    for t in system.get("terms", []):
        base[term_of(t["options"])] += float(t["influence"])
    term_of(())                                      # the base term always exists
    cps = []
    for cp in system.get("change_points", []):
        cps.append((int(cp["commit"]), term_of(cp["options"]), float(cp.get("delta", 0.0))))
    keys = sorted(index, key=index.get)

    synth = ref.Synthesizer.__new__(ref.Synthesizer)
    synth.n_commits, synth.n_options = n_commits, n_options
    synth.n_cps = len(cps)
    synth.cov = float(system.get("noise", {}).get("relative_sd", 0.0))
    synth.seed = None
    synth.term_matrix = pd.DataFrame([[1 if j in k else 0 for j in range(n_options)] for k in keys],
                                     columns=["opt" + str(i) for i in range(n_options)])
    synth.terms = {i: list(k) for i, k in enumerate(keys)}
    infl = np.tile(np.array(base), (n_commits, 1))
    for loc, term, delta in cps:
        infl[loc:, term] += delta
    synth.influences = pd.DataFrame(infl, columns=list(range(len(keys))))
    synth.changepoints = pd.DataFrame({"loc": [c[0] for c in cps], "term": [c[1] for c in cps],
                                       "shift": [np.nan] * len(cps)})
    return synth


def export_reference_system(ref, n_commits, n_options, n_cps, p_inter, p_degree, cov, seed):
    with contextlib.redirect_stdout(sys.stderr):
        s = ref.Synthesizer(n_commits, n_options, n_cps, p_inter, p_degree, cov, seed)
    infl = s.influences.values
    merged = {}
    for t, opts in s.terms.items():
        key = tuple(sorted(int(o) for o in opts))
        merged[key] = merged.get(key, 0.0) + float(infl[0, t])
    cps = []
    for i in range(len(s.changepoints)):
        loc, term = int(s.changepoints["loc"][i]), int(s.changepoints["term"][i])
        # actual jump in the generated matrix (0 if overwritten by a later-generated
        # change point of the same term at an earlier commit, or if loc == 0)
        delta = float(infl[loc, term] - infl[loc - 1, term]) if loc > 0 else 0.0
        cps.append({"commit": loc, "options": sorted(int(o) for o in s.terms[term]), "delta": delta,
                    "shift": float(s.changepoints["shift"][i])})
    return {"format": "knobs-cp-system/1", "n_options": n_options, "n_commits": n_commits,
            "terms": [{"options": list(k), "influence": v} for k, v in merged.items()],
            "change_points": cps, "noise": {"relative_sd": cov},
            "generator": {"tool": "reference Synthesizer", "n_cps": n_cps, "p_interaction": p_inter,
                          "p_interaction_degree": p_degree, "cov": cov, "seed": seed}}


# ---------------------------------------------------------------- faster, identical query

def make_fast_query(ref):
    """Same as ref.query_configurations (change_point_identification.py:326-430) for
    ignore_vm=True, statement for statement, except that once the (never popped) solver
    is unsat it stays unsat, so the remaining loop iterations only consume the same
    np.random draws and skip building/checking z3 constraints. Same constraints, same RNG
    consumption; but Z3's chosen model depends on the history of the global z3 context,
    so the configurations returned (and hence the run) are equivalent, not bit-identical
    to --slow-queries. It removes the dominant z3 cost of the reference."""
    z3 = ref.z3
    orig = ref.query_configurations

    def query_configurations(path_to_dimacs, configs, n_options, max_solutions=10,
                             ignore_vm=False, set_vary=[]):
        if not ignore_vm:
            return orig(path_to_dimacs, configs, n_options, max_solutions, ignore_vm, set_vary)
        solver = z3.Solver()
        solutions, solution_vectors, iterations_count = [], [], 0
        if len(configs) == 0:
            configs.append([0 for i in range(n_options)])
        dead = False
        while len(solution_vectors) < max_solutions and iterations_count < 1000:
            if dead:   # replay only the RNG consumption of the original loop body
                if len(set_vary) == 0:
                    np.random.choice(np.arange(n_options)[1:-1])
                else:
                    sd = set(list(range(n_options))) - set(set_vary)
                    np.random.choice(list(sd), size=min(1, len(sd) // 2), replace=False)
                iterations_count += 1
                continue
            target = z3.BitVec('target', n_options)
            for sol_vector in solution_vectors:
                solver.add(target != sol_vector)
            config_strings = ["".join(list(map(str, conf))) for conf in configs]
            for config in config_strings:
                solver.add(target != z3.BitVecVal(config, n_options))
            if len(set_vary) == 0:
                origin = z3.BitVecVal("0" * n_options, n_options)
                distance = int(np.random.choice(np.arange(n_options)[1:-1]))
                solver.add(ref.hamming(origin, target, 1) == distance)
            else:
                set_deselected = set(list(range(n_options))) - set(set_vary)
                set_deselected = np.random.choice(list(set_deselected), size=min(1, len(set_deselected) // 2), replace=False)
                for selected_opt in set_deselected:
                    option = int(n_options - selected_opt)
                    try:
                        solver.add(z3.Extract(option, option, target) == 0)
                    except Exception:
                        pass
            if solver.check() == z3.sat:
                mod = bin(solver.model()[target].as_long())
                solutions.append(list(map(int, list('0' * (n_options - (len(mod) - 2)) + str(mod)[2:]))))
                solution_vectors.append(solver.model()[target])
            else:
                dead = True
            iterations_count += 1
        return solutions
    return query_configurations


# ---------------------------------------------------------------- initial sample

def distance_based_configs(n_options, n_configs):
    """Distance-based sampling without constraints: popcount uniform over the same range the
    reference uses (np.arange(n_options)[1:-1] = 1..n-2), options chosen uniformly, no repeats."""
    seen, out, tries = set(), [], 0
    while len(out) < n_configs and tries < 1000 * n_configs:
        tries += 1
        k = int(np.random.choice(np.arange(n_options)[1:-1]))
        c = np.zeros(n_options, dtype=int)
        c[np.random.choice(n_options, size=k, replace=False)] = 1
        if tuple(c) not in seen:
            seen.add(tuple(c))
            out.append(c)
    return np.vstack(out)


# ---------------------------------------------------------------- run

def run(ref, system, p):
    np.random.seed(p["seed"])
    random.seed(p["seed"])
    synth = build_synthesizer(ref, system)
    n_options, n_commits = synth.n_options, synth.n_commits

    if p["cv"]:   # optional: paper's threefold CV (reference uses sklearn defaults)
        ref.GridSearchCV = functools.partial(ref.GridSearchCV.func if isinstance(ref.GridSearchCV, functools.partial) else ref.GridSearchCV, cv=p["cv"])
        ref.lm = types.SimpleNamespace(LassoCV=functools.partial(ref.lm.LassoCV, cv=p["cv"]))

    # count / time oracle calls without changing them
    stats = {"calls": 0, "time": 0.0, "pairs": set()}
    orig_oracle = synth.oracle
    def oracle(config, commit):
        t0 = time.perf_counter()
        r = orig_oracle(config, commit)
        stats["time"] += time.perf_counter() - t0
        stats["calls"] += 1
        stats["pairs"].add((tuple(int(x) for x in config), int(commit)))
        return r
    synth.oracle = oracle

    # time the z3 configuration queries (they dominate the reference's wall time)
    orig_query = make_fast_query(ref) if p["fast_queries"] else ref.query_configurations
    def query_configurations(*args, **kw):
        t0 = time.perf_counter()
        try:
            return orig_query(*args, **kw)
        finally:
            stats["query_time"] += time.perf_counter() - t0
    stats["query_time"] = 0.0
    ref.query_configurations = query_configurations

    t_start = time.perf_counter()
    with contextlib.redirect_stdout(sys.stderr):
        if p["init_sampling"] == "reference":   # exactly as the reference's __main__
            confs = np.vstack(list(map(lambda x: np.array(x), ref.query_configurations(
                "", [], n_options, p["n_initial_configs"], ignore_vm=True, set_vary=[]))))
        else:
            confs = distance_based_configs(n_options, p["n_initial_configs"])
        revs = ref.sample_commits(len(confs), n_commits, p["commit_rate"])
        sample = ref.construct_sample(confs, revs)
        learner = ref.ChangePointLearner(synth, m_measurements_per_iteration=p["budget"])

        trace, failures, iterations, stopped = [], 0, 0, False
        scores = {"precision": 0.0, "recall": 0.0, "f1_score": 0.0}
        for i in range(p["max_iter"]):
            if learner.stop():
                stopped = True
                break
            iterations += 1
            learner.build_likelihoods(sample, threshold=p["threshold"])
            try:
                learner.calc_candidate_solution()
            except Exception as e:  # KDE grid search needs >= cv peaks; reference crashes here
                failures += 1
                learner.candidate_solutions.append([])
                print("calc_candidate_solution failed:", repr(e), file=sys.stderr)
            learner.acquire_configurations()          # redundant call, kept as in __main__
            sample = learner.next_sample()
            learner.caching()
            scores = learner.score(estimated=learner.cached_solutions.keys(), return_f1=True)
            if p["trace"]:
                trace.append({"iteration": iterations, "f1": scores["f1_score"],
                              "precision": scores["precision"], "recall": scores["recall"],
                              "candidate": [[int(c["commit"]), int(c["option"])] for c in learner.candidate_solutions[-1]],
                              "cache_size": len(learner.cached_solutions),
                              "configs": scores["configs"], "measured_pairs": len(stats["pairs"])})
        if not stopped and learner.stop():
            stopped = True
    wall = time.perf_counter() - t_start

    gt = [[int(a), int(b)] for a, b in learner.get_ground_truth()]
    cand = learner.candidate_solutions[-1] if learner.candidate_solutions else []
    with contextlib.redirect_stdout(sys.stderr):
        last = learner.score(estimated=[(c["commit"], c["option"]) for c in cand], return_f1=True) if cand else None
    out = {
        "associations": sorted([[int(k[0]), int(k[1]), float(w)] for k, w in learner.cached_solutions.items()]),
        "ground_truth": gt,
        "f1": scores["f1_score"], "precision": scores["precision"], "recall": scores["recall"],
        "last_candidate_f1": last["f1_score"] if last else 0.0,
        "iterations": iterations, "stopped_by_criterion": stopped,
        "measurements": len(stats["pairs"]),              # distinct (config, commit) pairs measured
        "oracle_calls": stats["calls"],                    # reference re-measures every iteration
        "reference_measurement_count": scores.get("measurements"),   # its own count (includes the unmeasured next sample)
        "configs": len(learner.sample),
        "initial_configs": int(len(confs)),
        "candidate_failures": failures,
        "wall_time_s": wall, "oracle_time_s": stats["time"], "config_query_time_s": stats["query_time"],
        "algorithm_time_s": wall - stats["time"] - stats["query_time"],
        "params": {k: v for k, v in p.items() if k != "trace"},
    }
    if p["trace"]:
        out["trace"] = trace
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ref")
    ap.add_argument("system", nargs="?")
    ap.add_argument("--generate", nargs=7, metavar=("N_COMMITS", "N_OPTIONS", "N_CPS", "P_INTERACTION", "P_DEGREE", "COV", "SEED"))
    ap.add_argument("--seed", type=int)
    ap.add_argument("--budget", type=int, help="measurements per iteration (default 500)")
    ap.add_argument("--max-iter", type=int, help="default 30")
    ap.add_argument("--initial-configs", type=int, help="default 2 * n_options")
    ap.add_argument("--commit-rate", type=float, help="default 0.03")
    ap.add_argument("--threshold", type=float, help="relative threshold tau (default 0.01)")
    ap.add_argument("--init-sampling", choices=["distance", "reference"], default="distance")
    ap.add_argument("--cv", type=int, default=0, help="folds for LassoCV and the KDE grid search (0 = sklearn default as in the reference)")
    ap.add_argument("--trace", action="store_true")
    ap.add_argument("--slow-queries", action="store_true",
                    help="use the reference's query_configurations unchanged (same results, much slower)")
    a = ap.parse_args()

    ref = load_reference(a.ref)
    if a.generate:
        g = a.generate
        sysj = export_reference_system(ref, int(g[0]), int(g[1]), int(g[2]), float(g[3]), float(g[4]), float(g[5]), int(g[6]))
        json.dump(sysj, sys.stdout, indent=1)
        print()
        return
    if not a.system:
        ap.error("SYSTEM.json required")
    with open(a.system) as f:
        system = json.load(f)
    sp = system.get("params", {})
    n = int(system["n_options"])
    p = {
        "seed": a.seed if a.seed is not None else int(sp.get("seed", 0)),
        "budget": a.budget or int(sp.get("measurements_per_iteration", 500)),
        "max_iter": a.max_iter or int(sp.get("max_iterations", 30)),
        "n_initial_configs": a.initial_configs or int(sp.get("n_initial_configs", 2 * n)),
        "commit_rate": a.commit_rate or float(sp.get("commit_rate", 0.03)),
        "threshold": a.threshold or float(sp.get("threshold", 0.01)),
        "init_sampling": a.init_sampling, "cv": a.cv, "trace": a.trace,
        "fast_queries": not a.slow_queries,
    }
    json.dump(run(ref, system, p), sys.stdout)
    print()


if __name__ == "__main__":
    main()
