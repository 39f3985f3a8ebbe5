# `cargo test` output (stdout and stderr together), less every test target that ran no test:
# its "Running ..." or "Doc-tests ..." header, "running 0 tests" and its "test result" line
# (issue 21 point 7: a filtered run printed 21 such blocks). Everything else passes through as it
# comes. When no target ran a test, one line says so, naming the filter (-v filter=...).
# Used by scripts/test.sh; the tests feed it sample output (deploy::local_run).

function plain(s) {
  gsub(/\033\[[0-9;]*[A-Za-z]/, "", s)
  return s
}

function flush_held() {
  if (held != "") {
    print held
    held = ""
  }
}

{
  line = plain($0)
  if (skipping) {
    if (line ~ /^test result: /) {
      skipping = 0
      after_result = 1
    }
    next
  }
  if (after_result) {
    after_result = 0
    if (line == "") next
  }
  if (line ~ /^ *(Running|Doc-tests) /) {
    flush_held()
    held = $0
    next
  }
  if (held != "") {
    if (line == "") {
      held = held "\n" $0
      next
    }
    if (line == "running 0 tests") {
      held = ""
      skipping = 1
      empty++
      next
    }
    flush_held()
  }
  if (line ~ /^running [0-9]+ tests?$/ && line != "running 0 tests") ran++
  print
  fflush()
}

END {
  flush_held()
  if (empty > 0 && ran == 0) {
    if (filter != "") {
      print "no test matched: " filter
    } else {
      print "no test ran"
    }
  }
}
