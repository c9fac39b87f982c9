/**
 * A legacy session's heap does not grow with its elicitation rounds. The SDK server of each session
 * compiled the elicitation's `requestedSchema` with Ajv at every round, and its engine kept every
 * schema it compiled for as long as the session lived: this probe read 5.3-6.7 KiB a round before
 * fronts/legacy/schema-validator.ts (and each compile cost about 0.4 ms of CPU). Now one compile serves
 * every round that asks with the same schema: the probe reads 0.2-1.7 KiB a round (a review's nine runs
 * on a loaded machine), most of it code V8 optimises meanwhile (a heap snapshot diff shows code and
 * nothing else growing), a fixed amount spread over the rounds. Measured in a process of its own with
 * `--expose-gc` (test/fixtures/legacy-heap-probe.ts), over 1,000 rounds in one session after a warm-up
 * of 800.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runHeapProbe } from '../helpers/heap-probe.js';

const PROBE = fileURLToPath(new URL('../fixtures/legacy-heap-probe.ts', import.meta.url));
const ROUNDS = 1000;
const BOUND_BYTES = 3 * 1024;

interface HeapFigure {
  rounds: number;
  perRoundBytes: number;
  errors: number;
}

describe('a legacy session answering elicitations', () => {
  it(`keeps at most ${BOUND_BYTES} bytes of gateway heap a round (${ROUNDS} rounds in one session, after full collections)`, async () => {
    const figure = await runHeapProbe<HeapFigure>(PROBE, { PROBE_ROUNDS: String(ROUNDS) });
    expect(figure).toMatchObject({ rounds: ROUNDS, errors: 0 });
    expect(figure.perRoundBytes).toBeLessThanOrEqual(BOUND_BYTES);
  }, 120_000);
});
