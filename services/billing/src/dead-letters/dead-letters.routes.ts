import type { ServiceVerifier } from '@tollgate/auth';
import { replayDeadLetters, showDeadLetters } from '@tollgate/contracts';
import { AppError } from '@tollgate/errors';
import { inspectDeadLetters, replayDeadLetters as replay, type UsageTopology } from '@tollgate/events';
import { parseInput } from '@tollgate/http';
import { Router } from 'express';
import type { z } from 'zod';
import { singleQuery } from '../http/account-params';
import { serviceCaller } from '../http/caller';

/**
 * The operator's view of the usage dead-letter queue (`pnpm tollgate dlq show|replay`): what is there
 * and why, and a replay of the valid events that is exactly-once because billing records an id once.
 */
/** RabbitMQ unreachable is the operator's retry-later (503), not a server fault. */
async function brokerCall<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch {
    throw new AppError('service_unavailable', 'RabbitMQ is unreachable; retry when it is back');
  }
}

export function deadLetterRoutes(deps: {
  amqpUrl: string;
  topology: UsageTopology;
  verifier: ServiceVerifier;
}): Router {
  const router = Router();
  router.get('/internal/dlq', serviceCaller(deps.verifier, ['admin']), async (req, res) => {
    const q = parseInput(showDeadLetters.query, singleQuery(req));
    const answer: z.input<typeof showDeadLetters.response> = {
      data: await brokerCall(() => inspectDeadLetters(deps.amqpUrl, deps.topology, q.limit)),
    };
    res.json(answer);
  });
  router.post('/internal/dlq/replay', serviceCaller(deps.verifier, ['admin']), async (req, res) => {
    const body = parseInput(replayDeadLetters.request, req.body ?? {});
    const answer: z.input<typeof replayDeadLetters.response> = {
      data: await brokerCall(() => replay(deps.amqpUrl, deps.topology, body.limit)),
    };
    res.json(answer);
  });
  return router;
}
