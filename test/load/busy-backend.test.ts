/**
 * A busy backend at scale (issue 25): 2,000 calls parked on a backend that answers pings 5 s late, none
 * lost, and the backend never taken for hung. The same scenario parks 200 in `npm test`
 * (test/integration/backend-liveness.test.ts).
 */
import { describeBusyBackend } from '../helpers/busy-backend.js';

describeBusyBackend(2_000);
