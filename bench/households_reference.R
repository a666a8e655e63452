# The NDPMPM of Hu, Reiter & Wang (2018) on the simulated households, for bench/households_reference.py.
#
# Peer software, run beside bayessdc by bench/households_reference.py (which writes the inputs and reads the
# outputs); nothing here is part of bayessdc. Two modes, arguments as key=value:
#
#   Rscript bench/households_reference.R install src=DIR|TAR.GZ lib=DIR age_lo=.. age_hi=.. [adult=18] [gap=16]
#       [npbayes=TAR.GZ]
#     Builds NestedCategBayesImpute (CRAN 1.2.1, GPL >= 3) into lib with the structural zeros of
#     bayessdc.models.households.household_rules in place of the package's own (the ACS rules of the paper). The
#     package's documentation says how: "users can modify the list of structural zeros by downloading the package
#     source, making changes only to the checkconstraints_imp.cpp file and re-building the package". Only the
#     checks of one household (isValid and its helpers) are replaced; the rest of the file is kept. age_lo and
#     age_hi are the youngest and the oldest age of each age code 1, 2, ... (comma separated): a category's
#     bounds, or one age per code for single years. A rule is a structural zero where it is broken whatever the
#     ages within the categories are (the cells of the categorical table that no household can fill).
#     With npbayes, NPBayesImputeCat (0.5) is installed into lib too (the flat DPMPM for the one-person households).
#
#   Rscript bench/households_reference.R run lib=DIR members=CSV singles=CSV out=CSV iterations=CSV
#       nrun=N burn=N thin=N m=M FF=20 SS=15 K=40 seed=S adult_codes=3,4,.. parallel=0 threads=2 log=FILE
#     members: the members other than the reference person of every household of 2 or more persons, in the
#     package's input form (the reference person moved to the household level, as its example does): Hhindex,
#     pernum, then the individual variables sex, education, employed, age, relate (relate 1 spouse, 2 child,
#     3 parent, 4 non-relative), then the household variables tenure, headsex, headeducation, heademployed,
#     headage, area, householdsize (the number of members other than the reference person), all coded 1, 2, ....
#     The positions of sex, age and relate among the individual variables and of headsex and headage among the
#     household variables are the package's (its constraint checker reads them there).
#     singles: the one-person households (area, tenure, sex, age, education, employed; codes 1, 2, ...), which the
#     NDPMPM cannot take (its documentation: "the minimum household size for this mcmc sampler is 2"): they are
#     modelled by a flat DPMPM (NPBayesImputeCat, truncated to the adult ages adult_codes: a reference person is
#     an adult) and drawn as that package's DPMPM_nozeros_syn draws (each record from its latent class).
#     out: the m synthetic datasets, one row per person (the reference person included), with the column
#     synthetic (1..m) and household (per dataset). iterations: the NDPMPM's per-iteration figures.
#     parallel=1: the package's RcppParallel mode (Parallel = TRUE, as its example runs), with threads threads. Off
#     by default: on this machine (R 4.2.2, Debian's RcppParallel 5.1.6) it leaks memory (on 1,000 households the R
#     process held 1.45 GB at iteration 3,950, growing 40 to 75 MB per 100 iterations) and its iterations slow down
#     steadily (0.045 s each at iteration 2,000 of a run, 1.1 s at 3,750); serially the R process stays within
#     0.2 to 0.6 GB and 0.05 s per iteration over 10,000 iterations.

args <- commandArgs(trailingOnly = TRUE)
mode <- args[1]
kv <- list()
for (a in args[-1]) {
  at <- regexpr("=", a, fixed = TRUE)
  kv[[substr(a, 1, at - 1)]] <- substr(a, at + 1, nchar(a))
}
arg <- function(name, default = NULL) {
  if (!is.null(kv[[name]])) kv[[name]] else if (!is.null(default)) default else stop("missing argument ", name)
}
ints <- function(text) as.integer(strsplit(text, ",", fixed = TRUE)[[1]])

# ---------------------------------------------------------------------------------------------------------------
# install: the package with the households' structural zeros

# The checks of one household. datah[1..h] the members' sex, datah[h+1..2h] their age codes, datah[2h+1..3h] their
# relationship codes (1 reference person, 2 spouse, 3 child, 4 parent, 5 non-relative: the checker adds 1 to the
# members' relate, the reference person being 1), the reference person last (the package's layout).
RULES_CPP <- '
// bayessdc bench: the rules of bayessdc.models.households.household_rules, on age codes with bounds
#define HH_REFERENCE 1
#define HH_SPOUSE 2
#define HH_CHILD 3
#define HH_PARENT 4
static const int AGE_CODES = @CODES@;
static const int AGE_LO[] = {0, @LO@};
static const int AGE_HI[] = {0, @HI@};
static const int ADULT = @ADULT@;
static const int GAP = @GAP@;

inline int age_lo(int code) { return (code >= 1 && code <= AGE_CODES) ? AGE_LO[code] : -1000; }
inline int age_hi(int code) { return (code >= 1 && code <= AGE_CODES) ? AGE_HI[code] : -1000; }

int isValid(int *datah, int hh_size) {
    int head = -1, heads = 0, spouses = 0;
    for (int i = 1; i <= hh_size; i++) {
        int relate = datah[2 * hh_size + i];
        if (relate == HH_REFERENCE) { heads++; head = i; }
        if (relate == HH_SPOUSE) { spouses++; }
    }
    if (heads != 1) { return 0; }                                  // one reference person
    if (spouses > 1) { return 0; }                                 // at most one spouse
    int head_age = datah[hh_size + head];
    if (age_hi(head_age) < ADULT) { return 0; }                    // adult reference person
    for (int i = 1; i <= hh_size; i++) {
        int relate = datah[2 * hh_size + i];
        int age = datah[hh_size + i];
        if (relate == HH_SPOUSE && age_hi(age) < ADULT) { return 0; }                          // adult spouse
        if (relate == HH_CHILD && age_lo(age) > age_hi(head_age) - GAP) { return 0; }          // children younger by 16
        if (relate == HH_PARENT && age_hi(age) < age_lo(head_age) + GAP) { return 0; }         // parents older by 16
    }
    return 1;
}

'

install <- function() {
  src <- arg("src")
  lib <- arg("lib")
  lo <- ints(arg("age_lo"))
  hi <- ints(arg("age_hi"))
  stopifnot(length(lo) == length(hi), all(lo <= hi))
  dir.create(lib, recursive = TRUE, showWarnings = FALSE)
  work <- tempfile("ndpmpm")
  dir.create(work)
  if (dir.exists(src)) {
    file.copy(src, work, recursive = TRUE)
    pkg <- file.path(work, basename(normalizePath(src)))
  } else {
    untar(src, exdir = work)
    pkg <- file.path(work, "NestedCategBayesImpute")
  }
  cpp <- file.path(pkg, "src", "checkconstraints_imp.cpp")
  text <- readLines(cpp)
  first <- grep("^inline bool IsHead", text)
  last <- grep("^int checkconstraints_imp\\(int \\*data", text)
  if (length(first) != 1 || length(last) != 1) stop("unexpected ", cpp, ": not the CRAN 1.2.1 file")
  rules <- RULES_CPP
  rules <- sub("@CODES@", length(lo), rules, fixed = TRUE)
  rules <- sub("@LO@", paste(lo, collapse = ", "), rules, fixed = TRUE)
  rules <- sub("@HI@", paste(hi, collapse = ", "), rules, fixed = TRUE)
  rules <- sub("@ADULT@", arg("adult", "18"), rules, fixed = TRUE)
  rules <- sub("@GAP@", arg("gap", "16"), rules, fixed = TRUE)
  writeLines(c(text[seq_len(first - 1)], rules, text[last:length(text)]), cpp)
  status <- system2(file.path(R.home("bin"), "R"), c("CMD", "INSTALL", "--no-test-load", "-l", shQuote(lib),
                                                      shQuote(pkg)))
  if (status != 0) stop("R CMD INSTALL NestedCategBayesImpute failed (status ", status, ")")
  npbayes <- kv[["npbayes"]]
  if (!is.null(npbayes) && !requireNamespace("NPBayesImputeCat", lib.loc = lib, quietly = TRUE)) {
    status <- system2(file.path(R.home("bin"), "R"), c("CMD", "INSTALL", "-l", shQuote(lib), shQuote(npbayes)))
    if (status != 0) stop("R CMD INSTALL NPBayesImputeCat failed (status ", status, ")")
  }
  unlink(work, recursive = TRUE)
}

# ---------------------------------------------------------------------------------------------------------------
# run: the NDPMPM on the households of 2 or more, a flat DPMPM on the one-person households

HOUSEHOLD_VARS <- c("tenure", "headsex", "headeducation", "heademployed", "headage", "area")
PERSON_VARS <- c("sex", "education", "employed", "age")

run_ndpmpm <- function(members, nrun, burn, thin, m, FF, SS, synindex, log, parallel) {
  individual_variable_index <- 3:7
  household_variable_index <- 8:14  # the last one the household size
  stopifnot(identical(names(members)[individual_variable_index], c("sex", "education", "employed", "age", "relate")),
            identical(names(members)[household_variable_index], c(HOUSEHOLD_VARS, "householdsize")))
  sizes <- tabulate(members$householdsize[!duplicated(members$Hhindex)])
  if (any(sizes == 0)) stop("the household sizes are not contiguous from 2 (the package needs every size from 2 ",
                            "to the largest): households of ", paste(seq_along(sizes)[sizes == 0] + 1, collapse = ", "),
                            " persons are missing")
  data <- list(household = members, individual_variable_index = individual_variable_index,
               household_variable_index = household_variable_index)
  MissData <- initMissing(data, struc_zero_variables = c("sex", "age", "relate", "headsex", "headage"),
                          miss_batch = 10)
  orig <- initData(MissData)
  dHH <- vapply(household_variable_index, function(j) max(members[, j]), 0)
  hyper <- list(FF = FF, SS = SS, aa = 0.25, ab = 0.25, ba = 0.25, bb = 0.25, dHH = dHH, blocksize = 10000)
  mc <- list(nrun = nrun, burn = burn, thin = thin)
  mc$eff.sam <- (mc$nrun - mc$burn) / mc$thin
  para <- initParameters(orig, hyper, TRUE)
  output <- initOutput(orig, hyper, mc)
  struc_weight <- rep(1, length(orig$n_star_h))
  sink(log)
  on.exit(sink())
  results <- RunModel(orig, mc, hyper, para, output, synindex, individual_variable_index, household_variable_index,
                      HHhead_at_group_level = TRUE, weight_option = FALSE, struc_weight = struc_weight,
                      MissData = MissData, Parallel = parallel)
  results
}

# The synthetic members (the package's columns: Hhindex, pernum, the individual and the household variables) as
# persons, the reference person rebuilt from the household variables; a household starts at pernum 1.
ndpmpm_persons <- function(syn) {
  syn <- as.data.frame(syn)
  names(syn) <- c("Hhindex", "pernum", "sex", "education", "employed", "age", "relate", HOUSEHOLD_VARS)
  syn$household <- cumsum(syn$pernum == 1)
  heads <- syn[syn$pernum == 1, ]
  heads <- data.frame(household = heads$household, area = heads$area, tenure = heads$tenure, relate = 0L,
                      sex = heads$headsex, age = heads$headage, education = heads$headeducation,
                      employed = heads$heademployed)
  others <- syn[, c("household", "area", "tenure", "relate", PERSON_VARS)]
  both <- rbind(heads, others[, names(heads)])
  both[order(both$household, both$relate != 0), ]
}

run_singles <- function(singles, nrun, burn, synindex, K, seed, adult_codes) {
  vars <- c("area", "tenure", "sex", "age", "education", "employed")
  X <- as.data.frame(lapply(singles[, vars], function(x) factor(x, levels = seq_len(max(x)))))
  age_levels <- levels(X$age)
  minors <- setdiff(age_levels, as.character(adult_codes))
  MCZ <- NULL
  if (length(minors) > 0) {
    MCZ <- as.data.frame(lapply(X, function(x) factor(rep(NA, length(minors)), levels = levels(x))))
    MCZ$age <- factor(minors, levels = age_levels)
  }
  model <- NPBayesImputeCat::CreateModel(X, MCZ, K, if (is.null(MCZ)) 0L else 20L * nrow(X), 0.25, 0.25, seed)
  done <- 0
  out <- vector("list", length(synindex))
  dj <- vapply(X, nlevels, 0L)
  for (k in seq_along(synindex)) {
    model$Run(0, synindex[k] - done, 1, TRUE)
    done <- synindex[k]
    snap <- model$snapshot
    z <- snap$z + 1
    drawn <- matrix(0L, nrow(X), length(vars))
    for (j in seq_len(nrow(X))) {
      repeat {
        for (v in seq_along(vars)) {
          drawn[j, v] <- sample.int(dj[v], 1, prob = snap$psi[seq_len(dj[v]), z[j], v])
        }
        if (drawn[j, 4] %in% adult_codes) break
      }
    }
    colnames(drawn) <- vars
    out[[k]] <- data.frame(household = seq_len(nrow(X)), relate = 0L, drawn)
  }
  out
}

run <- function() {
  lib <- arg("lib")
  .libPaths(c(lib, .libPaths()))
  Sys.setenv(RCPP_PARALLEL_NUM_THREADS = arg("threads", "2"))
  suppressPackageStartupMessages({
    library(NestedCategBayesImpute, lib.loc = lib)
    library(dplyr)
  })
  nrun <- as.integer(arg("nrun"))
  burn <- as.integer(arg("burn"))
  thin <- as.integer(arg("thin"))
  m <- as.integer(arg("m"))
  seed <- as.integer(arg("seed", "1"))
  synindex <- round(seq(burn + 1, nrun, length.out = m))  # as the package's example spaces its imputations
  members <- read.csv(arg("members"))
  singles <- read.csv(arg("singles"))
  set.seed(seed)
  start <- proc.time()[["elapsed"]]
  results <- run_ndpmpm(members, nrun, burn, thin, m, as.integer(arg("FF", "20")), as.integer(arg("SS", "15")),
                        synindex, arg("log"), arg("parallel", "0") == "1")
  ndpmpm_seconds <- proc.time()[["elapsed"]] - start
  start <- proc.time()[["elapsed"]]
  single_sets <- run_singles(singles, nrun, burn, synindex, as.integer(arg("K", "40")), seed,
                             ints(arg("adult_codes")))
  singles_seconds <- proc.time()[["elapsed"]] - start
  datasets <- list()
  for (k in seq_len(m)) {
    nested <- ndpmpm_persons(results$synData[[k]])
    alone <- single_sets[[k]][, names(nested)]
    alone$household <- alone$household + max(nested$household)
    datasets[[k]] <- cbind(synthetic = k, rbind(nested, alone))
  }
  write.csv(do.call(rbind, datasets), arg("out"), row.names = FALSE)
  output <- results$output
  iterations <- data.frame(iteration = seq_len(nrun), seconds = output$elapsed_time[, 1],
                           households_sampled = output$nout[, 1])
  write.csv(iterations, arg("iterations"), row.names = FALSE)
  cat(sprintf("ndpmpm_seconds=%.3f\nsingles_seconds=%.3f\nsynindex=%s\nF_occupied=%s\nS_occupied_max=%s\n",
              ndpmpm_seconds, singles_seconds, paste(synindex, collapse = ","),
              paste(range(output$F_occupied), collapse = ","), paste(range(output$S_occupied_max), collapse = ",")))
}

if (identical(mode, "install")) install() else if (identical(mode, "run")) run() else stop("mode: install or run")
