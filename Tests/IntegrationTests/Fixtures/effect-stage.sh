#!/bin/sh
# A test stage with a side effect, idempotent on the job's key (as every stage must be):
# every run is logged to $EFFECTS/runs.log; the effect itself (a line in effects.log)
# happens once per key, guarded by an atomic mkdir.
set -eu
cat > /dev/null
echo "$PHOTOMEMO_JOB_KEY" >> "$EFFECTS/runs.log"
if [ -n "${EFFECT_SLEEP:-}" ]; then sleep "$EFFECT_SLEEP"; fi
name=$(printf '%s' "$PHOTOMEMO_JOB_KEY" | sha256sum | cut -c1-64)
if mkdir "$EFFECTS/done/$name" 2>/dev/null; then
    echo "$PHOTOMEMO_JOB_KEY" >> "$EFFECTS/effects.log"
fi
