import type { ServiceVerifier } from '@tollgate/auth';
import { AppError } from '@tollgate/errors';
import { inspectDeadLetters, replayDeadLetters, type UsageTopology } from '@tollgate/events';
import { parseInput } from '@tollgate/http';
import { Router } from 'express';
import { z } from 'zod';
import { limitParam, singleQuery } from '../http/account-params';
import { serviceCaller } from '../http/caller';

const showQuery = z.strictObject({ limit: limitParam(20, 1000) });
const replayBody = z.strictObject({ limit: z.number().int().min(1).max(100_000).default(1000) });

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
    const q = parseInput(showQuery, singleQuery(req));
    res.json({ data: await brokerCall(() => inspectDeadLetters(deps.amqpUrl, deps.topology, q.limit)) });
  });
  router.post('/internal/dlq/replay', serviceCaller(deps.verifier, ['admin']), async (req, res) => {
    const body = parseInput(replayBody, req.body ?? {});
    res.json({ data: await brokerCall(() => replayDeadLetters(deps.amqpUrl, deps.topology, body.limit)) });
  });
  return router;
}
