import type { ClientAddress } from '@tollgate/http';
import type { Request, Response } from 'express';
import { userOf } from '../http/session';
import type { Acting } from '../upstream/internal-client';

/**
 * Who a change made through the dashboard acts for, for the owning service's audit log (keys,
 * billing): the signed-in user and the client's address as the edge resolved it.
 */
export const actingOf =
  (clientAddress: ClientAddress) =>
  (req: Request, res: Response): Acting => ({
    userId: userOf(res).id,
    address: clientAddress(req),
  });
