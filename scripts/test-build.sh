# Sourced by scripts/test.sh and scripts/test-unit.sh: an incremental build of everything (tests
# included) into dist/. dist/ and tsc's build info are kept between runs, so a warm run compiles only
# what changed and skips the workflow bundle when its inputs did not change (scripts/build/bundle-workflows.ts).

# Outputs whose source is gone (a test file deleted or renamed must stop running), and a full emit
# when an output is missing (tsc's build info alone would think it is still there).
prune_dist() {
  [[ -d dist ]] || return 0
  local out src missing=0
  while IFS= read -r -d '' out; do
    src=${out#dist/}
    src=${src%.map}
    src=${src%.js}
    src=${src%.d.ts}
    [[ -f $src.ts ]] || rm -f "$out"
  done < <(find dist -mindepth 2 -type f \( -name '*.js' -o -name '*.js.map' -o -name '*.d.ts' \) -print0)
  while IFS= read -r -d '' src; do
    [[ -f dist/${src%.ts}.js ]] || { missing=1; break; }
  done < <(find shared api workflows activities worker db jobs admin test scripts -name '*.ts' ! -name '*.d.ts' -print0 2>/dev/null)
  ((missing == 0)) || rm -f dist/.tsbuildinfo
}

incremental_build() {
  prune_dist
  if ! npm run --silent build:all; then
    # While several people edit at once, ALLOW_TYPE_ERRORS=1 runs what tsc still emitted. Never in CI.
    [[ ${ALLOW_TYPE_ERRORS:-0} == 1 && -z ${CI:-} ]] || return 1
    echo "[test] type errors ignored (ALLOW_TYPE_ERRORS=1)" >&2
  fi
}

# Splits the arguments of npm test into node --test flags (those starting with -, with the value of
# the flags that take one) and test file name patterns (the rest): sets node_flags and patterns.
split_test_args() {
  node_flags=() patterns=()
  while (($#)); do
    case $1 in
      --test-name-pattern | --test-skip-pattern | --test-reporter | --test-reporter-destination | \
        --test-concurrency | --test-timeout | --test-shard | --test-coverage-include | --test-coverage-exclude)
        (($# >= 2)) || { echo "$1 needs a value" >&2; return 1; }
        node_flags+=("$1" "$2"); shift 2 ;;
      -*) node_flags+=("$1"); shift ;;
      *) patterns+=("$1"); shift ;;
    esac
  done
}
