"""Benchmark of the DPMPM synthesizer: wall time, ESS per second, peak memory.

Below the public API: times the Gibbs sampler itself and sets it beside NUTS on the marginal model
(``build_model``).

Usage::

    python bench/dpmpm.py                 # CE-like n = 6,208 and n = 1,000,000, blocked Gibbs
    python bench/dpmpm.py --configs collapsed,1 collapsed,0 conditional,1   # also without the level
                                          # exchanges, and with the textbook alpha | sticks update
    python bench/dpmpm.py --nuts          # also NUTS (nutpie) on the marginalised PyMC model, the alternative
    python bench/dpmpm.py --sizes 6208    # one size only
    python bench/dpmpm.py --sizes 6208 --configs collapsed,1,0,0 collapsed,1,1,0 collapsed,1,1,10
                                          # variants ALPHA,LEVEL_EXCHANGES[,PATTERN_EXCHANGES[,SPLIT_MERGE]]
    python bench/dpmpm.py --gate 4 100000 5000 50 --seed 1   # the convergence gate of long chains
    python bench/dpmpm.py --gate 2 4000 1000 4 --vlss    # the same on the VLSS individuals (../shared/data)
    python bench/dpmpm.py --powers 1 0.9 --draws 60000  # regime changes on the power posterior
    python bench/dpmpm.py --reference     # NPBayesImputeCat 0.5 (R) side by side, and an independent collapsed
                                          # sampler (bench/reference_dpmpm.py; about 3 minutes; skipped without R)

Short runs hide the slowest mode (2026-11-23). The CE-like posterior has regimes with 11, 12 or 13 large
components (pi_k > 0.01), different groupings of the 40 patterns, and a chain changes regime about once
every 20,000 iterations: 12 changes in 4 chains x 60,000 iterations without pattern exchanges, 9 with them
(seed 11; the changes of the 1,000-iteration block medians of the count). A 10,000-iteration run (the
reference protocol below) usually stays in one regime, so its ESS of alpha and of the marginals says
nothing about the regimes; a chain that does change regime within the run shows an ESS of alpha near 20.
What the synthesis draws from, the county probabilities given each pattern, differs between regimes by up to
two posterior standard deviations, so the gate now monitors them (patterns with at least 50 records):

    --gate 2 4000 1000 4 --seed 0 (the default settings)   r_hat 1.068, min ESS 29 (pattern conditionals);
        1.79 with pattern exchanges (--configs collapsed,1,1,0)
        (before they were monitored, the same seed passed at r_hat 1.005 on alpha, occupied, marginals)
    --gate 2 60000 1000 10 --seed 3, without / with pattern exchanges
                                           r_hat 1.25 / 1.53, 80 / 85 s
    4 chains x 100,000 iterations (thin 50), seeds 1 and 6, with pattern exchanges
                                           r_hat 1.28 and 1.53; 20-25% of the conditionals above 1.01

The real VLSS 1997 individuals (n = 27,765, commune with 194 levels synthesized; ``--vlss``) show the same, more
clearly: ``--gate 2 4000 1000 4 --seed 0 --vlss`` r_hat 1.83 on the pattern conditionals (44% above 1.01, 16 s);
``--gate 4 40000 5000 40 --seed 1 --vlss`` 1.39 (11% above 1.01, min ESS 8.5, 199 s) while each chain's ESS of
alpha is 760-1,100: every chain mixes within its configuration and the chains disagree.

The regimes reach the release: on the VLSS individuals a chain in another regime reported an expected match
risk and attribute disclosures 0.6 per-dataset sd (8.5% of the inherent min-max range) away from the other
chains (``bench/regime_effect.py``).

The gate will not pass on these data at any run length a user would choose until a sampler crosses the
regimes faster. Parallel tempering over the likelihood does not look like that sampler: on the power posterior
(``--powers 1 0.97 0.93 0.9 0.8 --draws 60000 --seed 11``, 2 chains of 60,000 iterations each, 38-49 s per
power) the regimes do not melt as the likelihood flattens, the components merge: 11-13 large components and 5
and 4 regime changes per chain at power 1; 10-11 and 8 and 5 at 0.97; 9-10 and 0 and 4 at 0.93; 8-9 and 0 and 1
at 0.9; 4 and none at 0.8. A hot replica therefore holds a different, equally stuck configuration, and a ladder
fine enough for swaps would need tens of replicas to reach it (the complete-data log-likelihood has a posterior
standard deviation of about 240, measured by a scratch script over 200 draws with the allocations drawn from
their conditional, so steps of about 0.01 in the power). The split-merge moves
(``--configs collapsed,1,1,10``: 4.2 s per 1,000 iterations against 1.3 s with the pattern exchanges alone
and 0.8 s without either) and the pattern exchanges did not.

Protocol of the reference figures (ANCHORS.md, NPBayesImputeCat 0.5): one chain, 5,000 burn-in + 5,000 kept,
K = 40, a_alpha = b_alpha = 0.25; ESS per second counted over the whole sampling time (burn-in included).
Each size runs in its own process so that the peak memory (ru_maxrss) is its own; the sizes run one after
another, never at once.

Latest runs, 2026-12-01, after the speed-ups of the allocation step (issue 35, item 2; all draws exact, each new
kernel tested against its distribution; listed in the docstring of ``bayessdc.models.dpmpm.gibbs``):
``BAYESSDC_RLIB=<rlib> OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python bench/dpmpm.py --reference
--reference-iterations 4000 --collapsed-sweeps 0``, section (b), n = 1,000,000, three invocations one after another
(load 1.3-2.0 on 2 cores, another session running), then the code before:

    this code       NPBayesImputeCat 111 s per 1,000, bayessdc 1.86 s, ratio 59 (load 2.0); 106 s, 1.82 s, ratio 58
                    (load 1.4); 110 s, 1.86 s, ratio 59 (load 1.3)
    before          105 s, 2.38 s, ratio 44 (load 1.1)

The 50x target is met. What each lever gave: CPU of the sampler alone in s per 1,000 iterations at n = 1,000,000
(a ``/tmp`` script timing ``fit``, one chain, the code before and after alternately), and the allocation of the
4,373 cells above ``SMALL_CELL`` of one fixed state in ms (``multinomial_cdf`` and the cumulative sums, 200
repetitions):

    the inversion binomial's start (1 - p)^n by repeated squaring      2.47-2.49 -> 2.30-2.32 (load 3.1-3.9);
        allocation 1.94 -> 1.76-1.78 ms; the same chain
    single trials stepped over the drawn components' intervals;        allocation 1.76-1.78 -> 1.65-1.73 ms; the
        ziggurat exponentials for theta and the sticks                    chain within the noise (another chain)
    the binomials first for last iteration's components (following   2.33-2.38 -> 1.99-2.00 (load 2.1-2.3);
        the label swaps), not the three largest; the small cells'        allocation 1.75 -> 1.43 ms; without
        branch-free search                                                following the swaps 2.47 (stale guesses)
    the counts per pattern, int32 allocations, the last product       2.07-2.13 -> 1.99-2.05 (load 3.9-4.3); the
        fused with the cumulative sums                                    same chain

The level exchanges with the allocation tracking they need are now about 10% of an iteration (before the last
row above: 2.11-2.21 s per 1,000 with the defaults, 1.94-1.96 without the exchanges, 1.91 without the label swaps
too; load 3-3.2); the tracking alone about 6% (2.06-2.08 without the exchanges but with the tracking).

Levers measured on 2026-12-01 and not taken:

    a buffered xoshiro256++ generator (seeded from the chain's)       1.65 ns a double against 3.7-6.3 from the
        for the allocation's uniforms (branch dpmpm-fast-xoshiro)         Generator in a loop, but the allocation
                                                                          the same (1.41-1.43 ms) and the chain
                                                                          2.13-2.17 against 2.04-2.08 (4 seeds)
    inversion from the mode instead of BTPE for means 30-150          50-54 ns against 61-68 in isolation, but
                                                                          allocation 1.45-1.47 ms against 1.41-1.42
    SMALL_CELL 4, 12, 16 or 24 instead of 8 (before the guesses)      allocation 1.75, 1.82, 1.94, 2.19 ms
                                                                          against 1.73

Runs of 2026-11-27, after the kernels' reference counting was turned off (``_nrt=False``; see the docstrings
of ``bayessdc.models.exact_draws`` and ``bayessdc.models.dpmpm.gibbs``; the draws and the chains are unchanged):
``BAYESSDC_RLIB=<rlib> OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python bench/dpmpm.py --reference
--reference-iterations 4000 --collapsed-sweeps 0``, section (b), n = 1,000,000, alternating with the same
invocation of the code before the change (load 6-8 on 2 cores, two other sessions running):

    this code       NPBayesImputeCat 131 s per 1,000, bayessdc 3.16 s, ratio 42 (load 7.7)
                    134 s, 3.41 s, ratio 39 (load 6.4-6.7); an earlier run 178 s, 4.46 s, ratio 40 (load 7.1)
    before          138 s, 3.63 s, ratio 38 (load 7.5-8.0); 138 s, 3.62 s, ratio 38 (load 5.9); 127 s, 3.34 s,
                    ratio 38 (load 6.9)

The 50x target (2.6-2.8 s per 1,000 iterations at these reference times) is not met. CPU time of the sampler
alone (a ``/tmp`` script timing ``fit`` at n = 1,000,000, 2,000 iterations, one chain; old and new alternately,
load 7-7.5): 2.23-2.32 s per 1,000 against 2.41-2.54 before (7-9% less). Where the time goes now (the kernel's
steps timed with the CPU's cycle counter, 1,000 iterations of about 2.4 ms): the allocation step 88%, of which the
exact binomials 38% of the iteration (11,900 per iteration, 2.7 per cell above ``SMALL_CELL``, about 80 ns by
inversion and 115 ns by BTPE), the single trials 15% (22,300 at 16 ns), the cumulative sums and three largest
15%, the cumulative sums less the drawn components 8%; theta (gamma draws) 5%, level exchanges 2.5%, the rest
about 1%.

Levers measured and not taken (same scratch scripts, load 4-7):

    inline xoshiro256++ generator for the allocation's uniforms      5.0 -> 4.4 ns per uniform where the state
        lives in memory (0.65 ns in a loop that keeps it in registers; ``--rng`` on that branch times the two);
        3-4% less CPU per iteration. It changes the chain at every seed, and at the new chain the stochastic
        assertion of
        tests/models/dpmpm/test_synthesizer.py::test_label_attribute_risk_with_pattern_conditioning_is_eq_8 fails
        (full 0.1992 against pattern 0.2003; 0.206-0.208 against 0.200 at seeds 12 and 13 with either generator
        and at 11 with numpy's): not merged (branch ``dpmpm-inline-rng``, with distribution tests of the generator)
    a faster exact gamma (Marsaglia-Tsang) for theta                 theta is 5% of the iteration: at most 2-3%
    binomials only while their expected count is at least 3 or 6      2.23 / 2.32 s against 2.28: within noise
    numba-level inlining of multinomial_cdf / binomial                kept 8 of the 10 incref/decref pairs per
        cell, about 2%; with the reference counting off, inlining binomial was 2.22-2.28 s against 2.19-2.21
    error_model="numpy" (no division-by-zero checks)                  2.31-2.35 s against 2.30-2.33: none
    branch-free top three (selects)                                   103 against 116 ns per cell in isolation
        (1-2% of the iteration); in four interleaved lanes 292 ns: worse

Run of 2026-11-24, after the sparse allocation of large cells (``multinomial_cdf``; see the docstring of
``bayessdc.models.dpmpm.gibbs``): ``OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python bench/dpmpm.py --reference
--reference-iterations 4000 --collapsed-sweeps 0`` (load 4.9 on 2 cores, another session running), section (b):
NPBayesImputeCat 0.5 4.8 s for 40 iterations = 121 s per 1,000; bayessdc 6.5 s for 2,000 = 3.25 s per 1,000;
ratio 37 (target 50, not met; before the change 34-36 with 3.5-3.7 s per 1,000). Before / after in one process
(2,000 iterations, load 4.4-4.7): 3.69-3.73 / 3.31-3.40 s per 1,000 at n = 1,000,000, 0.44-0.45 / 0.41-0.42 at
n = 6,208.

Before, 2026-11-23 (``OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python bench/dpmpm.py``, load 1.1-1.8):
n = 6,208: 7.42 s for 10,000 iterations (0.74 s per 1,000, reference 0.9), alpha 1,140 ESS = 154 ESS/s
(reference about 210), smallest county marginal 462 ESS/s; n = 1,000,000: 51.5 s, alpha 8.6 ESS/s; ratio
6.94 sampling, 7.08 end to end (target 2); peak memory 987 / 921 MB. Same invocation with pattern exchanges
(``--configs collapsed,1,1,0``, load 2.3-3.2): 12.8 s and 64.9 s, ratio 5.05.

Earlier (2 cores shared with other sessions, load average 3.7-4.0 on 2 cores: absolute times are
inflated and vary by about 20% from run to run; ratios within one invocation are what count)::

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python bench/dpmpm.py --configs collapsed,1 collapsed,0 conditional,1

                                       n = 6,208            n = 1,000,000        reference, n = 6,208
    occupied cells                     1,993                4,919
    sampling, 10,000 iterations        6.52 s               48.1 s               8.8 s
    ratio 1,000,000 / 6,208            sampling 7.38, end to end (prepare + fit + m = 20 synthesis) 7.50
    alpha: ESS in 10,000 iterations    1,140                442                  about 1,850
    alpha ESS/s                        175                  9.2                  about 210
    six largest counties, ESS/s        526-693              98-107               520-580
    smallest over all 133 counties     526 ESS/s            81 ESS/s
    occupied components (95%)          13-22                39-40 (of K = 40)    25-31
    synthesis, m = 20                  0.04 s               2.0 s                about 12 s
    data preparation                   0.003 s              0.07 s (was 3 s)
    peak memory (whole process)        895 MB               919 MB

    variants at n = 6,208 (same invocation)
    without level exchanges            5.40 s, alpha 1,110 ESS = 206 ESS/s, counties 605-917 ESS/s
    alpha | sticks (Gamma) update      alpha 417 ESS = 76 ESS/s (collapsed: 1,140)

Earlier invocations (load 1.9-2.9): without level exchanges 5.07-5.35 s and alpha 207-219 ESS/s; the
1,000,000 / 6,208 sampling ratio 7.4-8.5 (10.3 when the load rose to 4 during the large run). Before this
work the ratio was 11 and preparing the million records took 3 s. The level exchanges cost 0-20% of the time
(within the noise here) and leave the ESS of alpha per iteration unchanged (1,140 against 1,110); they are
on by default because without them one of the largest counties stayed in one configuration in two of six
chains (2-12 ESS/s; ``GibbsSettings`` docstring).

The 2x target for 1,000,000 records is not met. Nothing in an iteration grows with the records any more
(before: the allocation and the synthesis drew per record or by numba's O(n p) binomial), but the number
of occupied cells grows 2.5 times, every cell holds about 200 records that several components share (2.6
exact binomials and 5 single draws per cell, against one or two single draws at n = 6,208), and all 40
components are occupied. Alpha at 1,000,000 records is far better determined, hence its low ESS.

Caution on the reference's ESS: it reports 25-31 occupied components. A chain of this sampler without the
label swaps (started, like it, with every component in use) stays at 31-39 with alpha about 15-19 and a
high alpha ESS (380 ESS/s), while with the swaps the chain moves to 13-22 and alpha about 1.9 (the
flat-likelihood prior check and the enumeration test validate the moves). The reference's figures are
those of a chain that has not reached this region: measured below (``--reference``), it sits at 31-38.

The reference side by side (``--reference``, 2026-11-24; NPBayesImputeCat 0.5 installed from
``../shared/reference`` into ``../rlib``, run through ``Rscript`` by ``bench/reference_dpmpm.py``)::

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python bench/dpmpm.py --reference
    (3 min 8 s; load average 3.2-3.8 on 2 cores, another session running; an earlier identical invocation at
    load 1.2-1.9 gave the same chains and release figures, the seeds being fixed, and 121 s / 3.58 s per 1,000
    iterations at n = 1,000,000, ratio 34)

    simulate_ce_like(n=6208, seed=1), one chain of 60,000 iterations each, K = 40, a_alpha = b_alpha = 0.25
                                       NPBayesImputeCat 0.5        bayessdc (defaults, 1 chain, thin 20)
    s per 1,000 iterations             0.86                        0.47
    occupied components 5/50/95%       31/35/38 | 31/35/38         11/14/18 | 12/14/18     (first | second half)
    alpha 5/50/95%                     10.5/13.9/17.9 | same       0.88/1.61/2.73 | 0.92/1.65/2.73

    independent collapsed Gibbs (Neal 2000 alg. 3, untruncated, theta and sticks integrated out; P(k) within
    0.0009 and P(alpha < 1) within 0.001 of the enumeration of an 8-record problem), 60,000 sweeps per chain,
    38-41 s: from 1 cluster 10/13/17 and alpha 0.75/1.43/2.42, from 40 clusters 12/14/18 and 0.90/1.62/2.68
    (both halves alike; the two chains sit in different regimes, as this sampler's chains do). Truncated
    (K = 40) and untruncated agree while the occupied components stay well below K. Scored with theta
    integrated out and the untruncated prior (alpha integrated), the reference's kept partitions lie about
    600 nats below the collapsed sampler's (medians -49,302 and -48,684; log-likelihood alone -34,544 and
    -34,633: the reference's extra components buy 90 nats of fit at about 700 of prior).

    release figures, m = 20 from the second half of each chain (conditioning "full", county synthesized),
    S = 100 inherent repetitions     inherent min   NPBayesImputeCat   bayessdc   inherent max   per-dataset sd
    expected match risk, g+county          3.78          3.645           3.562         5.409       0.55 / 0.42
    expected match risk, g+age+county     17.01         14.32           13.68         18.83        2.31 / 2.33
    true match rate, g+age+county          3.0e-4        2.0e-4          2.0e-4        4.3e-4
    exact attribute disclosures             103         242.2           241.4         315.4        16.4 / 14.5
    table deviations one / two / three-way          1255/5750/9172   1204/5654/9116

An agency using the reference would have released nearly the same figures: every one within 0.62 per-dataset
sd of ours (a difference of two means over m = 20 has a standard error of 0.32 sd); the largest are the table
deviations (+0.62, +0.52, +0.37 sd: slightly worse utility) and the expected match risk with {gender, age,
county} known (+0.27 sd, +35% of the inherent range, which is narrower than one dataset's sd). With
``--reference-m 100`` (same chains): within 0.29 sd, standard error 0.14 sd; expected match risk g+age+county
14.64 against 14.15 (+0.29 sd, +27% of the inherent range), table deviations +0.16 to +0.27 sd, attribute
disclosures 247.8 against 247.4. The stuck chain misreports alpha (8 times) and the number of components (2.5
times) far more than it moves the release.

n = 1,000,000 (same invocation): NPBayesImputeCat 5.4 s for 40 iterations after 5 warm-up ones = 134 s per
1,000 iterations; bayessdc 7.4 s for 2,000 = 3.71 s per 1,000; ratio 36. The 50x target is not met on this
machine: the reference runs at 121-134 s per 1,000 here (not 280), and this sampler at 3.5-3.7 s per 1,000
(a separate check: 3.64 s for 2,000 iterations, 3.52 s per 1,000 over 6,000; the reference 121 s per 1,000 over
40 and over 160 iterations).

Profiles of the sampler's kernel, dated (kept here from the docstring of ``bayessdc.models.dpmpm.gibbs``, which
states the method; the dated figures are this bench's):

Cost per iteration. The multinomial is drawn by conditional binomials, largest component first, until a few
records are left, then one categorical draw for each of those (:func:`bayessdc.models.exact_draws.multinomial`);
the binomials are exact and O(1) in ``n`` (:func:`bayessdc.models.exact_draws.binomial`: inversion or BTPE;
numba's own ``np.random.binomial`` is an inversion costing O(n p), which made the allocation step grow with the
records). Nothing in an iteration grows with ``n`` then, only with the number of occupied cells and how many
components share each cell's records: on the CE-like simulator 1,993 cells at n = 6,208 (mostly 1-3 records,
one draw each) against 4,919 at n = 1,000,000 (about 200 records, 2.6 binomials and 5 single draws each), and
all 40 components occupied at n = 1,000,000.

Where the time goes at n = 1,000,000 (per iteration, each step timed apart in a scratch copy
of this kernel): the allocation step 3.2 ms of 3.65 (theta 0.33, level exchanges 0.09, label swaps 0.025, alpha and
sticks 0.02); at n = 6,208 0.22 ms of 0.46. Within the allocation at 1,000,000 (4,373 cells above
``SMALL_CELL``, 2.5 binomials and 5 single trials each): about 0.85 ms in the binomials themselves (75 ns each,
a third of it in the exp/log1p of the inversion), 0.4-0.6 ms in the scans for the next largest component and
the dense bookkeeping over K, about 1 ms in the single trials (30-40 ns each) and 0.5 ms in the rest (products,
counts). Now the pass that computes the probabilities also keeps their cumulative sums and the three largest,
and the cell's draw is :func:`bayessdc.models.exact_draws.multinomial_cdf` (sparse: only the components that get
records are touched; no scan for the first three binomials; the single trials located in the cumulative sums
without a pass over K). Same process, before / after, 2,000 iterations at 1,000,000 and 4,000 at 6,208, load
average 4.4-4.7 on 2 cores (another session running; ``/tmp`` scratch script timing ``run_gibbs``): 3.69-3.73
/ 3.31-3.40 s per 1,000 iterations at 1,000,000; 0.44-0.45 / 0.41-0.42 at 6,208. ``bench/dpmpm.py
--reference --reference-iterations 4000 --collapsed-sweeps 0`` (load 4.9): NPBayesImputeCat 121 s per 1,000,
this sampler 3.25 s, ratio 37 (target 50, about 2.4 s per 1,000, not met). The random stream of the allocation
of cells above ``SMALL_CELL`` records changed with this (same seed, same chain; a different chain than before).

Profile of 2026-11-27 at n = 1,000,000 (one chain, cores=1; the kernel's steps timed with the CPU's cycle counter
in a scratch copy, 1,000 iterations, about 2.4 ms each, load 4-5 on 2 cores): the allocation step 88%, theta 5%,
level exchanges 2.5%, label swaps, alpha and sticks about 1%. Within the allocation, per iteration: the binomials
0.92 ms (9,900 by inversion at about 80 ns, 2,000 by BTPE at about 115 ns; 2.7 per cell above ``SMALL_CELL``),
the single trials 0.36 ms (22,300, about 16 ns each), the cumulative sums and three largest 0.36 ms (80 ns a
cell; a branch-free version was 11% faster in isolation, not taken), the cumulative sums less the drawn
components 0.2 ms, the products and counts 0.2 ms. Before it, numba's reference counting of the draws' array
arguments took 14% of the time (now off: :mod:`bayessdc.models.exact_draws`). The rest of the levers measured
and not taken are listed above.

Speed-ups of 2026-12-01 (issue 35, item 2; all draws exact, each kernel tested against its distribution): the
inversion binomial's start by repeated squaring; each larger cell's binomials first for the components its draw
gave records in the previous iteration (``guess``, relabelled through the label swaps), sorted by their
probability now, instead of finding the three largest in the pass of the cumulative sums (that search was 57 of
the pass's 79 ns a cell; without following the label swaps the stale guesses made the chain slower); the single
trials of large cells stepped over the drawn components' intervals, those of small cells located by a branch-free
count; ziggurat exponentials for theta's shape-1 gammas and the sticks' ``log U``; the counts of all variables but
the last summed per pattern; the tracked allocations int32; the last variable's product fused with the cumulative
sums. At n = 1,000,000: 2.44-2.49 s of CPU per 1,000 iterations before, about 2.0 after (alternating runs, load
2-4); the side-by-side figures and the levers not taken are above.

Random numbers: each chain draws from its own ``numpy.random.Generator`` (``bayessdc.synthesis.streams.rng(seed,
"chain", c)``), passed into the compiled sweep and every move, instead of numba's hidden per-thread state seeded
by ``np.random.seed``. Measured first (2026-11-27; ``/tmp`` scratch script timing ``run_gibbs``, one chain, cores=1,
``simulate_ce_like(n, seed=1)``, county synthesized, K = 40; the old and the new code run alternately, same
invocation; load 5-6 on 2 cores, another session's tests running): at n = 100,000, 5 x 2,000 iterations per run,
hidden state 1.19-1.26 s per 1,000 iterations, generator 1.05-1.09 (12% faster: numpy's gamma draws of theta
beat numba's legacy ones); at n = 1,000,000, 3 x 1,000, 2.64-2.80 against 2.53-2.61 in two pairs of runs at
load 3 (4% faster), within the noise in two pairs at load 5. Bounded integers come from
:func:`bayessdc.models.exact_draws.uniform_index` (numba's ``Generator.integers`` allocates an array per draw: 28%
slower in the predictive kernel).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import arviz as az  # noqa: E402
import numpy as np  # noqa: E402

REFERENCE = {
    "seconds_per_1000_iterations": 0.9,
    "ess_per_second_alpha": 210,
    "ess_per_second_top6_county_marginals": "520-580",
    "occupied_components": "25-31 of 40",
    "synthesis_m20_seconds": 12,
}


def gibbs(
    n: int,
    burn: int,
    draws: int,
    seed: int,
    alpha_update: str = "collapsed",
    exchange_moves: int = 1,
    pattern_moves: int = 0,
    split_merge_moves: int = 0,
) -> dict:
    """Fit the CE-like data of ``n`` records with the blocked Gibbs sampler; figures as a dict."""
    from bayessdc.models.dpmpm import DPMPMSynthesizer, GibbsSettings, prepare_categorical, simulate_ce_like
    from bayessdc.synthesis.datasets import draw_synthetic

    frame = simulate_ce_like(n=n, seed=seed)
    start = time.perf_counter()
    data = prepare_categorical(frame, ["county"], ["gender", "income", "age"])
    prepare_seconds = time.perf_counter() - start
    # compile (numba caches on disk; tiny runs make sure the timed runs do not include it)
    tiny = DPMPMSynthesizer(settings=GibbsSettings(draws=2, burn=0, chains=1, thin=1))
    draw_synthetic(tiny, tiny.fit(data, seed), data.take(np.arange(50)), 1, np.random.default_rng(0))
    settings = GibbsSettings(
        draws=draws,
        burn=burn,
        chains=1,
        thin=1,
        alpha_update=alpha_update,
        exchange_moves=exchange_moves,
        pattern_moves=pattern_moves,
        split_merge_moves=split_merge_moves,
    )
    synth = DPMPMSynthesizer(settings=settings)
    start = time.perf_counter()
    idata = synth.fit(data, seed)
    fit_seconds = time.perf_counter() - start
    seconds = idata.attrs["sampling_seconds"]
    posterior = idata.posterior
    ess_alpha = float(az.ess(posterior["alpha"]).to_array().item())
    counts = np.bincount(data.codes[:, data.variables.index("county")], minlength=len(data.levels["county"]))
    top6 = np.argsort(counts)[::-1][:6]
    ess_county = az.ess(posterior["marginal_county"]).to_array().to_numpy().ravel()
    start = time.perf_counter()
    draw_synthetic(synth, idata, data, 20, np.random.default_rng(seed))
    synthesis_seconds = time.perf_counter() - start
    occupied = posterior["occupied"].to_numpy().ravel()
    return {
        "sampler": f"blocked Gibbs (numba, cell counts, label swaps, {exchange_moves} K level exchanges, "
        f"{pattern_moves} K pattern exchanges, {split_merge_moves} split-merge, {alpha_update} alpha)",
        "n": n,
        "cells": int(len(data.cell_counts)),
        "iterations": burn + draws,
        "prepare_seconds": prepare_seconds,
        "sampling_seconds": seconds,
        "fit_seconds": fit_seconds,
        "seconds_per_1000_iterations": 1000 * seconds / (burn + draws),
        "ess_alpha": ess_alpha,
        "ess_per_second_alpha": ess_alpha / seconds,
        "ess_per_second_top6_county_marginals": [float(ess_county[i] / seconds) for i in top6],
        "top6_counties": [str(data.levels["county"][i]) for i in top6],
        "ess_per_second_min_county_marginal": float(ess_county.min() / seconds),
        "ess_per_second_occupied": float(az.ess(posterior["occupied"]).to_array().item() / seconds),
        "occupied_components_95": [float(np.quantile(occupied, 0.025)), float(np.quantile(occupied, 0.975))],
        "synthesis_m20_seconds": synthesis_seconds,
        "end_to_end_seconds": prepare_seconds + fit_seconds + synthesis_seconds,
        "peak_memory_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "load_average_1min_after": os.getloadavg()[0],
    }


#: The VLSS 1997 individuals (``../shared/data``, see its README), for ``--gate ... --vlss``.
VLSS = Path(__file__).resolve().parent.parent / ".." / "shared" / "data" / "d2_vietnam_vlss1997_individuals.csv"


def vlss_frame():
    """The VLSS individuals coded as in ``notebooks/dpmpm_ce.ipynb``: commune, sex, age group, education, insurance."""
    import pandas as pd

    if not VLSS.exists():
        raise SystemExit(f"--vlss needs {VLSS.resolve()} (../shared/data beside the repository; see its README)")
    d = pd.read_csv(VLSS)
    age = np.exp(d["age"]).round()  # the file holds log age
    frame = pd.DataFrame(
        {
            "commune": d["commune"],
            "sex": d["sex"],
            "age_group": pd.cut(age, [0, 14, 29, 44, 59, 200], labels=["0-14", "15-29", "30-44", "45-59", "60+"]),
            "education": pd.cut(d["educ"], [-1, 0, 2, 4, 7, 99], labels=["0", "1-2", "3-4", "5-7", "8+"]),
            "insurance": d["insurance"],
        }
    )
    for col in ("age_group", "education"):
        frame[col] = frame[col].astype(str)
    return frame


def vlss_data():
    """The VLSS individuals prepared for the DPMPM: commune synthesized, the four other columns kept."""
    from bayessdc.models.dpmpm import prepare_categorical

    return prepare_categorical(vlss_frame(), ["commune"], ["sex", "age_group", "education", "insurance"])


def gate(
    chains: int, draws: int, burn: int, thin: int, seed: int, config: str = "collapsed,1,0,0", vlss: bool = False
) -> dict:
    """The convergence gate and long-run ESS on the CE-like data (n = 6,208) or the VLSS individuals (n = 27,765),
    sampler variant ``config``."""
    from bayessdc.models.dpmpm import DPMPMSynthesizer, GibbsSettings, prepare_categorical, simulate_ce_like

    if vlss:
        data = vlss_data()
    else:
        data = prepare_categorical(simulate_ce_like(seed=0), ["county"], ["gender", "income", "age"])
    alpha_update, *moves = config.split(",")
    names = ("exchange_moves", "pattern_moves", "split_merge_moves")
    moves_given = dict(zip(names, map(int, moves), strict=False))
    settings = GibbsSettings(draws=draws, burn=burn, chains=chains, thin=thin, alpha_update=alpha_update, **moves_given)
    synth = DPMPMSynthesizer(settings=settings)
    start = time.perf_counter()
    idata = synth.fit(data, seed)
    seconds = time.perf_counter() - start
    report = synth.check(idata, data)
    conditional = synth.pattern_conditionals(idata, data, 50)[data.synthesize[0]]
    r_hat = az.rhat(conditional.to_dataset(name="c"))["c"].to_numpy()
    return {
        "gate": f"{chains} chains x ({burn} + {draws}) iterations, thin {thin}, seed {seed}, variant {config}",
        "data": "VLSS 1997 individuals, commune" if vlss else "CE-like, county",
        "seconds": seconds,
        **report.to_dict(),
        "r_hat_pattern_conditionals_max": float(r_hat.max()),
        "share_of_pattern_conditionals_above_1.01": float((r_hat > 1.01).mean()),
        "chain_means_occupied": idata.posterior["occupied"].mean("draw").round(2).to_numpy().tolist(),
        "chain_means_alpha": idata.posterior["alpha"].mean("draw").round(3).to_numpy().tolist(),
        "ess_alpha_per_chain": [float(az.ess(idata.posterior["alpha"].sel(chain=c).values)) for c in range(chains)],
        "ess_occupied_per_chain": [
            float(az.ess(idata.posterior["occupied"].sel(chain=c).values.astype(float))) for c in range(chains)
        ],
    }


def nuts(tune: int, draws: int, seed: int) -> dict:
    """NUTS (nutpie) on the marginalised model of :func:`bayessdc.models.dpmpm.build_model`, CE-like n = 6,208."""
    import nutpie

    from bayessdc.models.dpmpm import build_model, prepare_categorical, simulate_ce_like

    data = prepare_categorical(simulate_ce_like(seed=seed), ["county"], ["gender", "income", "age"])
    model = build_model(data, K=40)
    start = time.perf_counter()
    compiled = nutpie.compile_pymc_model(model)
    compile_seconds = time.perf_counter() - start
    start = time.perf_counter()
    idata = nutpie.sample(compiled, draws=draws, tune=tune, chains=1, cores=1, seed=seed, progress_bar=False)
    seconds = time.perf_counter() - start
    post = idata.posterior
    marginal = (post["pi"] * post["theta_county"]).sum("component")
    counts = np.bincount(data.codes[:, 3], minlength=len(data.levels["county"]))
    top6 = np.argsort(counts)[::-1][:6]
    ess_county = az.ess(marginal.rename("m")).to_array().to_numpy().ravel()
    depth = idata.sample_stats["depth"].to_numpy().ravel() if "depth" in idata.sample_stats else np.array([np.nan])
    steps = idata.sample_stats["n_steps"].to_numpy().ravel() if "n_steps" in idata.sample_stats else np.array([np.nan])
    return {
        "sampler": "NUTS (nutpie) on the marginalised PyMC model",
        "n": data.n_records,
        "tune": tune,
        "draws": draws,
        "compile_seconds": compile_seconds,
        "sampling_seconds": seconds,
        "seconds_per_draw": seconds / (tune + draws),
        "mean_tree_depth": float(np.nanmean(depth)),
        "max_tree_depth": float(np.nanmax(depth)),
        "mean_leapfrog_steps": float(np.nanmean(steps)),
        "ess_per_second_alpha": float(az.ess(post["alpha"]).to_array().item() / seconds),
        "ess_per_second_top6_county_marginals": [float(ess_county[i] / seconds) for i in top6],
        "top6_counties": [str(data.levels["county"][i]) for i in top6],
        "divergences": int(idata.sample_stats["diverging"].sum()),
    }


def regime_changes(pi: np.ndarray, block: int) -> tuple[int, list[int]]:
    """Changes of regime along one chain's ``pi`` (draw, component), ``block`` draws making 1,000 iterations.

    The changes of the 1,000-iteration block medians of the number of large components (pi_k > 0.01), and the
    regimes (numbers of large components) visited.
    """
    large = (pi > 0.01).sum(axis=-1)
    blocks = np.median(large[: len(large) // block * block].reshape(-1, block), axis=1)
    return int((np.diff(blocks) != 0).sum()), sorted({int(b) for b in blocks})


def powers(values: list[float], chains: int, iterations: int, seed: int) -> list[dict]:
    """Regime changes of the Gibbs sampler on the power posterior (likelihood to ``power``), CE-like data."""
    from bayessdc.models.dpmpm import (
        GibbsSettings,
        build_model,
        model_hyperparameters,
        prepare_categorical,
        run_gibbs,
        simulate_ce_like,
    )

    data = prepare_categorical(simulate_ce_like(seed=0), ["county"], ["gender", "income", "age"])
    hyper = model_hyperparameters(build_model(data, 40), data)
    rows = []
    for power in values:
        settings = GibbsSettings(draws=iterations, burn=1000, chains=chains, thin=20, likelihood_power=power)
        start = time.perf_counter()
        draws = run_gibbs(data, hyper, settings, seed=seed)
        per_chain = [regime_changes(draws["pi"][c], 1000 // settings.thin) for c in range(chains)]
        rows.append(
            {
                "power": power,
                "seconds": round(time.perf_counter() - start, 1),
                "regime_changes_per_chain": [c for c, _ in per_chain],
                "large_components_visited_per_chain": [r for _, r in per_chain],
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    return rows


# -- an independent collapsed Gibbs sampler (untruncated DP; shares no code with bayessdc.models.dpmpm) ---------


@functools.cache
def _collapsed_kernel():
    """Neal (2000) algorithm 3 for a DP mixture of products of multinomials, compiled on first use.

    theta (flat Dirichlet(a) per variable and component) and the sticks are integrated out: record ``i`` joins
    cluster ``c`` with probability proportional to ``n_c prod_j (m_cj[x_ij] + a) / (n_c + a d_j)`` and a new
    cluster with ``alpha prod_j 1 / d_j``. alpha ~ Gamma(a_alpha, rate b_alpha) is updated after every sweep by
    Escobar & West (1995): ``eta ~ Beta(alpha + 1, n)``, then a two-part Gamma mixture. Untruncated: the number
    of clusters is not bounded by K.
    """
    from numba import njit

    @njit(cache=False)
    def sweeps_kernel(codes, offsets, a, a_alpha, b_alpha, z, alpha, sweeps, thin, seed):
        np.random.seed(seed)  # noqa: NPY002 - numba's generator
        n, p = codes.shape
        cap = n + 1
        size = np.zeros(cap, np.int64)
        counts = np.zeros((cap, offsets[-1]), np.int64)
        d = np.empty(p)
        new_weight_base = 1.0
        for j in range(p):
            d[j] = offsets[j + 1] - offsets[j]
            new_weight_base /= d[j]
        for i in range(n):
            size[z[i]] += 1
            for j in range(p):
                counts[z[i], offsets[j] + codes[i, j]] += 1
        active = np.empty(cap, np.int64)
        position = -np.ones(cap, np.int64)
        free = np.empty(cap, np.int64)
        n_active, n_free = 0, 0
        for c in range(cap - 1, -1, -1):
            if size[c] > 0:
                position[c] = n_active
                active[n_active] = c
                n_active += 1
            else:
                free[n_free] = c
                n_free += 1
        weights = np.empty(cap)
        kept = sweeps // thin
        occupied = np.empty(kept, np.int64)
        alphas = np.empty(kept)
        for sweep in range(sweeps):
            for i in range(n):
                c = z[i]
                size[c] -= 1
                for j in range(p):
                    counts[c, offsets[j] + codes[i, j]] -= 1
                if size[c] == 0:  # drop the empty cluster
                    last = active[n_active - 1]
                    active[position[c]] = last
                    position[last] = position[c]
                    position[c] = -1
                    n_active -= 1
                    free[n_free] = c
                    n_free += 1
                total = 0.0
                for t in range(n_active):
                    k = active[t]
                    w = float(size[k])
                    for j in range(p):
                        w *= (counts[k, offsets[j] + codes[i, j]] + a) / (size[k] + a * d[j])
                    total += w
                    weights[t] = total
                total += alpha * new_weight_base
                u = np.random.random() * total  # noqa: NPY002
                t = 0
                while t < n_active and weights[t] <= u:
                    t += 1
                if t == n_active:  # a new cluster
                    n_free -= 1
                    k = free[n_free]
                    position[k] = n_active
                    active[n_active] = k
                    n_active += 1
                else:
                    k = active[t]
                z[i] = k
                size[k] += 1
                for j in range(p):
                    counts[k, offsets[j] + codes[i, j]] += 1
            eta = np.random.beta(alpha + 1.0, n)  # noqa: NPY002
            rate = b_alpha - np.log(eta)
            odds = (a_alpha + n_active - 1.0) / (n * rate)
            shape = a_alpha + n_active - 1.0
            if np.random.random() < odds / (1.0 + odds):  # noqa: NPY002
                shape += 1.0
            alpha = np.random.gamma(shape, 1.0 / rate)  # noqa: NPY002
            if (sweep + 1) % thin == 0:
                occupied[(sweep + 1) // thin - 1] = n_active
                alphas[(sweep + 1) // thin - 1] = alpha
        return occupied, alphas, z, alpha

    return sweeps_kernel


def collapsed_gibbs(
    codes: np.ndarray,
    n_levels,
    sweeps: int,
    seed: int,
    *,
    start_clusters: int = 1,
    z: np.ndarray | None = None,
    alpha: float = 1.0,
    thin: int = 1,
    a_alpha: float = 0.25,
    b_alpha: float = 0.25,
    a: float = 1.0,
) -> dict:
    """Run the collapsed sampler from ``z`` and ``alpha`` (default: ``start_clusters`` random clusters, alpha 1);
    occupied clusters and alpha per kept sweep, and the last allocation ``z``."""
    kernel = _collapsed_kernel()
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(n_levels)]).astype(np.int64)
    if z is None:
        z = np.random.default_rng(seed).integers(0, start_clusters, len(codes))
    z = np.unique(z, return_inverse=True)[1].ravel().astype(np.int64)  # labels 0 .. k - 1
    start = time.perf_counter()
    occupied, alphas, z, _ = kernel(codes, offsets, a, a_alpha, b_alpha, z, float(alpha), sweeps, thin, seed)
    return {"occupied": occupied, "alpha": alphas, "z": z, "seconds": time.perf_counter() - start}


def partition_log_likelihood(codes: np.ndarray, n_levels, z: np.ndarray, a: float = 1.0) -> float:
    """log p(records | partition), theta integrated out (flat Dirichlet(a)): the same in the truncated and the
    untruncated model, so it scores a partition of either sampler."""
    from scipy.special import gammaln

    labels = np.unique(z, return_inverse=True)[1].ravel()
    sizes = np.bincount(labels)
    total = 0.0
    for j, d in enumerate(n_levels):
        table = np.zeros((len(sizes), d))
        np.add.at(table, (labels, codes[:, j]), 1)
        total += float(np.sum(gammaln(a * d) - gammaln(a * d + sizes)) + np.sum(gammaln(a + table) - gammaln(a)))
    return total


def partition_scores(codes: np.ndarray, n_levels, z: np.ndarray, a_alpha: float = 0.25, b_alpha: float = 0.25):
    """``log p(records | partition)`` and ``log p(records | partition) + log p(partition)`` under the untruncated
    DP (Ewens prior, alpha ~ Gamma(a_alpha, rate b_alpha) integrated out): the log posterior of the partition up
    to a constant. For the truncated model (K = 40) the prior term is an approximation, close while the number
    of occupied components stays well below K."""
    from scipy.special import gammaln

    sizes = np.bincount(np.unique(z, return_inverse=True)[1].ravel())
    likelihood = partition_log_likelihood(codes, n_levels, z)
    prior = float(gammaln(sizes).sum()) + ewens_alpha_integral(len(sizes), len(z), a_alpha, b_alpha)
    return likelihood, likelihood + prior


def ewens_alpha_integral(k: int, n: int, a_alpha: float, b_alpha: float, upper: float = np.inf) -> float:
    """log of the integral over alpha ~ Gamma(a_alpha, rate b_alpha), up to ``upper``, of
    alpha^k Gamma(alpha) / Gamma(alpha + n) (the Ewens prior of a partition into k blocks, alpha integrated out)."""
    from scipy.special import gammaln

    log_alpha = np.linspace(-30.0, 12.0, 40_001)
    alpha = np.exp(log_alpha)
    log_f = (
        a_alpha * np.log(b_alpha)
        - gammaln(a_alpha)
        + a_alpha * log_alpha
        - b_alpha * alpha
        + k * log_alpha
        + gammaln(alpha)
        - gammaln(alpha + n)
    )  # density in log alpha: the Jacobian alpha is the a_alpha (not a_alpha - 1) power
    log_f = np.where(alpha <= upper, log_f, -np.inf)
    top = log_f.max()
    return float(top + np.log(np.trapezoid(np.exp(log_f - top), log_alpha)))


def collapsed_enumeration_check(sweeps: int = 300_000, seed: int = 5) -> dict:
    """The collapsed sampler against the exact posterior of a tiny problem (8 records, 3 variables, Bell(8) =
    4,140 partitions; alpha ~ Gamma(0.25, 0.25) integrated numerically): P(k clusters) and P(alpha < 1)."""
    from scipy.special import gammaln

    codes = np.array([[0, 0, 0], [0, 0, 1], [0, 1, 0], [1, 1, 2], [1, 1, 2], [1, 0, 2], [0, 0, 0], [1, 1, 1]])
    n_levels = (2, 2, 3)
    n = len(codes)

    def partitions(n):  # restricted growth strings
        z = [0] * n

        def grow(i, top):
            if i == n:
                yield np.array(z)
                return
            for c in range(top + 2):
                z[i] = c
                yield from grow(i + 1, max(top, c))

        z[0] = 0
        yield from grow(1, 0)

    by_k = np.full(n + 1, -np.inf)
    for z in partitions(n):
        k = z.max() + 1
        log_w = partition_log_likelihood(codes, n_levels, z) + float(gammaln(np.bincount(z)).sum())
        by_k[k] = np.logaddexp(by_k[k], log_w)
    integral = np.array([ewens_alpha_integral(k, n, 0.25, 0.25) for k in range(n + 1)])
    below = np.array([ewens_alpha_integral(k, n, 0.25, 0.25, upper=1.0) for k in range(n + 1)])
    log_pk = by_k + integral
    pk = np.exp(log_pk - np.logaddexp.reduce(log_pk[1:]))
    pk[0] = 0.0
    exact_below = float(np.sum(pk[1:] * np.exp(below[1:] - integral[1:])))
    run = collapsed_gibbs(codes, n_levels, sweeps, seed, start_clusters=3)
    sampled = np.bincount(run["occupied"], minlength=n + 1)[: n + 1] / len(run["occupied"])
    return {
        "exact_p_k": pk[1:].round(4).tolist(),
        "sampled_p_k": sampled[1:].round(4).tolist(),
        "max_abs_difference_p_k": float(np.abs(sampled - pk).max()),
        "exact_p_alpha_below_1": round(exact_below, 4),
        "sampled_p_alpha_below_1": round(float((run["alpha"] < 1).mean()), 4),
        "sweeps": sweeps,
    }


# -- the reference implementation side by side (--reference) ----------------------------------------------------


def _quantile_text(halves: dict[str, list[float]], digits: int) -> str:
    return "   ".join(f"{name} {'/'.join(f'{q:.{digits}f}' for q in qs)}" for name, qs in halves.items())


def reference_comparison(
    iterations: int,
    large_n: int,
    large_reference_iterations: int,
    large_iterations: int,
    collapsed_sweeps: int,
    m: int = 20,
    repetitions: int = 100,
    seed: int = 7,
) -> dict:
    """NPBayesImputeCat 0.5 beside this project's blocked Gibbs sampler and an independent collapsed sampler.

    (a) CE-like n = 6,208 (``simulate_ce_like(n=6208, seed=1)``): one chain of ``iterations`` each, occupied
    components and alpha (5/50/95%) in both halves, s per 1,000 iterations; m synthetic datasets from the second
    half of each chain (county synthesized, ``conditioning="full"``) and their release figures beside the
    inherent bounds. (b) n = ``large_n``: s per 1,000 iterations of each (0: skipped). (c) the collapsed sampler,
    checked by enumeration, then two chains of ``collapsed_sweeps`` on the n = 6,208 data (0: skipped). Prints as
    it goes; returns the figures.
    """
    import pandas as pd
    import reference_dpmpm as ref

    from bayessdc.models.dpmpm import DPMPMSynthesizer, GibbsSettings, prepare_categorical, simulate_ce_like
    from bayessdc.synthesis.datasets import draw_synthetic

    keep, synthesize = ["gender", "income", "age"], ["county"]
    known_sets = [["gender", "county"], ["gender", "age", "county"]]
    out: dict = {"load_average_start": os.getloadavg()}
    print(f"load average at the start: {os.getloadavg()}", flush=True)
    missing = ref.reference_unavailable()
    if missing:
        print(f"NPBayesImputeCat: {missing}", flush=True)

    # (a) n = 6,208
    frame = simulate_ce_like(n=6208, seed=1)
    data = prepare_categorical(frame, synthesize, keep)
    original = frame[list(data.variables)]
    print(f"\n(a) CE-like n = {data.n_records:,}, one chain of {iterations:,} iterations each, K = 40", flush=True)
    releases = {}
    if not missing:
        every = iterations // (2 * m)
        run = ref.run_reference(
            data.codes, data.variables, data.n_levels, iterations, keep_every=every, keep_from=iterations // 2,
            keep_z=True, seed=seed,
        )  # fmt: skip
        out["reference"] = {
            "seconds_per_1000_iterations": run.seconds_per_1000_iterations,
            "occupied": ref.chain_halves(run.k_star),
            "alpha": ref.chain_halves(run.alpha),
        }
        run_z = run.z
        releases["NPBayesImputeCat"] = ref.reference_release(run, data, m, seed)
        print(f"  load average after the reference: {os.getloadavg()}", flush=True)
    tiny = DPMPMSynthesizer(settings=GibbsSettings(draws=2, burn=0, chains=1, thin=1))
    draw_synthetic(tiny, tiny.fit(data, seed), data.take(np.arange(50)), 1, np.random.default_rng(0))  # compile
    thin = 20
    synth = DPMPMSynthesizer(settings=GibbsSettings(draws=iterations, burn=0, chains=1, thin=thin))
    idata = synth.fit(data, seed)
    posterior = idata.posterior
    out["bayessdc"] = {
        "seconds_per_1000_iterations": 1000 * idata.attrs["sampling_seconds"] / iterations,
        "occupied": ref.chain_halves(posterior["occupied"].to_numpy()),
        "alpha": ref.chain_halves(posterior["alpha"].to_numpy()),
    }
    second = az.InferenceData(posterior=posterior.isel(draw=slice(posterior.sizes["draw"] // 2, None)))
    joint = draw_synthetic(synth, second, data, m, np.random.default_rng(seed))
    releases["bayessdc"] = synth.release_frame(data, joint)
    print(f"  load average after bayessdc: {os.getloadavg()}", flush=True)
    for name in ("reference", "bayessdc"):
        if name in out:
            r = out[name]
            label = "NPBayesImputeCat 0.5" if name == "reference" else f"bayessdc (thin {thin})"
            print(f"  {label:24s} {r['seconds_per_1000_iterations']:.2f} s per 1,000 iterations")
            print(f"    occupied components 5/50/95%: {_quantile_text(r['occupied'], 0)}")
            print(f"    alpha 5/50/95%:               {_quantile_text(r['alpha'], 2)}")
    table = ref.release_comparison(original, releases, synthesize, keep, known_sets, repetitions=repetitions, seed=seed)
    out["release_figures"] = table.to_dict(orient="index")
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(
            f"\n  release figures, m = {m} from the second half of each chain, S = {repetitions} inherent repetitions"
        )
        print(table.to_string(float_format=lambda v: f"{v:.4g}"))
    if "NPBayesImputeCat" in releases:
        diffs = ref.release_differences(table, "NPBayesImputeCat", "bayessdc")
        print("\n  NPBayesImputeCat - bayessdc")
        print(diffs.to_string(float_format=lambda v: f"{v:.3g}"))
        out["sentence"] = ref.release_sentence(table, "NPBayesImputeCat", "bayessdc", m)
        print("\n  " + out["sentence"], flush=True)

    # (b) n = large_n
    if large_n:
        print(f"\n(b) CE-like n = {large_n:,}: seconds per 1,000 iterations", flush=True)
        frame = simulate_ce_like(n=large_n, seed=1)
        large = prepare_categorical(frame, synthesize, keep)
        del frame
        if not missing:
            run = ref.run_reference(
                large.codes, large.variables, large.n_levels, large_reference_iterations, warmup=5, seed=seed
            )
            out["large_reference"] = {"iterations": run.iterations, "seconds": run.seconds, "load": os.getloadavg()}
            print(
                f"  NPBayesImputeCat 0.5: {run.seconds:.1f} s for {run.iterations} iterations (after 5 warm-up ones) = "
                f"{run.seconds_per_1000_iterations:.0f} s per 1,000; load {os.getloadavg()}",
                flush=True,
            )
        synth = DPMPMSynthesizer(settings=GibbsSettings(draws=large_iterations, burn=0, chains=1, thin=thin))
        seconds = synth.fit(large, seed).attrs["sampling_seconds"]
        out["large_bayessdc"] = {"iterations": large_iterations, "seconds": seconds, "load": os.getloadavg()}
        print(
            f"  bayessdc: {seconds:.1f} s for {large_iterations:,} iterations = "
            f"{1000 * seconds / large_iterations:.2f} s per 1,000; load {os.getloadavg()}",
            flush=True,
        )
        if not missing:
            ratio = (run.seconds / run.iterations) / (seconds / large_iterations)
            out["large_ratio"] = ratio
            print(f"  bayessdc is {ratio:.0f} times faster per 1,000 iterations (target at least 50)", flush=True)

    # (c) the collapsed sampler
    if collapsed_sweeps:
        print(
            "\n(c) independent collapsed Gibbs sampler (Neal 2000 alg. 3, untruncated DP, theta and sticks "
            "integrated out)"
        )
        check = collapsed_enumeration_check()
        out["collapsed_enumeration"] = check
        print(f"  enumeration check (8 records): {json.dumps(check)}", flush=True)
        out["collapsed"] = []
        segments = 20
        for start_clusters in (1, 40):
            z = np.random.default_rng(seed).integers(0, start_clusters, data.n_records)
            occupied, alphas, partitions, seconds = [], [], [], 0.0
            alpha = 1.0
            for segment in range(segments):
                r = collapsed_gibbs(
                    data.codes, data.n_levels, collapsed_sweeps // segments, seed + segment, z=z, alpha=alpha
                )
                z, alpha = r["z"], r["alpha"][-1]
                occupied.append(r["occupied"])
                alphas.append(r["alpha"])
                partitions.append(z)
                seconds += r["seconds"]
            entry = {
                "start_clusters": start_clusters,
                "sweeps": collapsed_sweeps,
                "seconds": seconds,
                "occupied": ref.chain_halves(np.concatenate(occupied)),
                "alpha": ref.chain_halves(np.concatenate(alphas)),
                "partitions": partitions,
            }
            out["collapsed"].append(entry)
            print(
                f"  chain from {start_clusters} cluster(s), {collapsed_sweeps:,} sweeps in {seconds:.0f} s\n"
                f"    occupied clusters 5/50/95%: {_quantile_text(entry['occupied'], 0)}\n"
                f"    alpha 5/50/95%:             {_quantile_text(entry['alpha'], 2)}",
                flush=True,
            )
        print("  beside (from (a)): bayessdc blocked Gibbs occupied", _quantile_text(out["bayessdc"]["occupied"], 0))
        print("                     bayessdc blocked Gibbs alpha   ", _quantile_text(out["bayessdc"]["alpha"], 2))
        if "reference" in out:
            print(
                "                     NPBayesImputeCat occupied      ", _quantile_text(out["reference"]["occupied"], 0)
            )
            print("                     NPBayesImputeCat alpha         ", _quantile_text(out["reference"]["alpha"], 2))
        collapsed_z = [z for e in out["collapsed"] for z in e["partitions"][segments // 2 :]]
        scored = {"collapsed": [partition_scores(data.codes, data.n_levels, z) for z in collapsed_z]}
        if "reference" in out:
            scored["NPBayesImputeCat"] = [partition_scores(data.codes, data.n_levels, z) for z in run_z]
        print("  partitions scored (medians over the kept ones; theta integrated out):")
        for name, values in scored.items():
            values = np.array(values)
            out[f"partition_scores_{name}"] = values.tolist()
            print(
                f"    {name:17s} log p(records | partition) {np.median(values[:, 0]):.0f}, + log Ewens prior (alpha "
                f"integrated) = {np.median(values[:, 1]):.0f} "
                f"(range {values[:, 1].min():.0f} to {values[:, 1].max():.0f})"
            )
        print(
            "\n  truncated (K = 40, bayessdc and NPBayesImputeCat) against untruncated (collapsed): the same model "
            "while the occupied components stay well below K; the truncation's prior on the partition differs slightly "
            "(the K-th stick takes the rest of the mass)"
        )
    out["load_average_end"] = os.getloadavg()
    print(f"load average at the end: {os.getloadavg()}", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="*", default=[6208, 1_000_000])
    parser.add_argument("--burn", type=int, default=5000)
    parser.add_argument("--draws", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--nuts", action="store_true", help="also measure NUTS on the marginalised model")
    parser.add_argument(
        "--configs",
        nargs="+",
        default=["collapsed,1,0,0"],
        help="sampler variants ALPHA_UPDATE,EXCHANGE_MOVES[,PATTERN_MOVES[,SPLIT_MERGE_MOVES]] (collapsed or "
        "conditional; level and pattern exchanges per iteration in multiples of K; split-merge moves per "
        "iteration); the first runs at every size, the others at the first size",
    )
    parser.add_argument(
        "--gate",
        nargs=4,
        type=int,
        metavar=("CHAINS", "DRAWS", "BURN", "THIN"),
        help="instead: run the convergence gate of the default sampler with these settings and print it",
    )
    parser.add_argument(
        "--powers",
        type=float,
        nargs="+",
        default=None,
        help="instead: regime changes of 2 chains on the power posterior at each of these powers of the likelihood "
        "(--draws iterations per chain)",
    )
    parser.add_argument(
        "--vlss", action="store_true", help="with --gate: the VLSS 1997 individuals (../shared/data), commune"
    )
    parser.add_argument(
        "--reference",
        action="store_true",
        help="instead: NPBayesImputeCat 0.5 (R, ../shared/reference) beside this sampler and an independent collapsed "
        "sampler, n = 6,208 and n = 1,000,000 (bench/reference_dpmpm.py; skipped cleanly without R)",
    )
    parser.add_argument("--reference-iterations", type=int, default=60_000, help="with --reference: chain length")
    parser.add_argument("--reference-m", type=int, default=20, help="with --reference: synthetic datasets")
    parser.add_argument("--reference-large-n", type=int, default=1_000_000)
    parser.add_argument(
        "--reference-large-iterations",
        type=int,
        nargs=2,
        default=[40, 2000],
        metavar=("REFERENCE", "BAYESSDC"),
        help="with --reference: timed iterations of each sampler at the large n",
    )
    parser.add_argument("--collapsed-sweeps", type=int, default=60_000, help="with --reference: per collapsed chain")
    parser.add_argument("--nuts-tune", type=int, default=100)
    parser.add_argument("--nuts-draws", type=int, default=100)
    parser.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--one-config", default="collapsed,1,0,0", help=argparse.SUPPRESS)
    parser.add_argument("--one-nuts", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.reference:
        reference_comparison(
            args.reference_iterations,
            args.reference_large_n,
            *args.reference_large_iterations,
            args.collapsed_sweeps,
            m=args.reference_m,
        )
        return
    if args.powers is not None:
        powers(args.powers, 2, args.draws, args.seed)
        return
    if args.gate is not None:
        print(json.dumps(gate(*args.gate, args.seed, args.configs[0], vlss=args.vlss), indent=2))
        return
    if args.one is not None:
        alpha_update, *moves = args.one_config.split(",")
        print(json.dumps(gibbs(args.one, args.burn, args.draws, args.seed, alpha_update, *map(int, moves))))
        return
    if args.one_nuts:
        print(json.dumps(nuts(args.nuts_tune, args.nuts_draws, args.seed)))
        return
    results = []
    first = args.configs[0]
    runs = [["--one", str(n), "--one-config", first] for n in args.sizes]
    runs += [["--one", str(args.sizes[0]), "--one-config", other] for other in args.configs[1:]]
    runs += [["--one-nuts"]] if args.nuts else []
    for extra in runs:
        cmd = [sys.executable, __file__, *extra, "--burn", str(args.burn), "--draws", str(args.draws)]
        cmd += ["--seed", str(args.seed), "--nuts-tune", str(args.nuts_tune), "--nuts-draws", str(args.nuts_draws)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True)
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(json.dumps(results[-1], indent=2), flush=True)
    print("\nreference (NPBayesImputeCat 0.5, ANCHORS.md):", json.dumps(REFERENCE))
    gibbs_runs = [r for r in results if r["sampler"].startswith("blocked")][: len(args.sizes)]
    if len(gibbs_runs) == 2:
        small, large = gibbs_runs
        for key in ("sampling_seconds", "end_to_end_seconds"):
            ratio = large[key] / small[key]
            print(f"{key} ratio n = {large['n']:,} vs n = {small['n']:,}: {ratio:.2f} (target <= 2)")
        cells = large["cells"] / small["cells"]
        print(f"occupied cells: {small['cells']:,} vs {large['cells']:,} ({cells:.2f} times)")
    print(f"load average during the run: {os.getloadavg()}")


if __name__ == "__main__":
    main()
