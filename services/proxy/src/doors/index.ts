/**
 * The front doors the proxy serves (door.ts): one per public API, each mounted at
 * `POST /api/v1<path>` and `POST /v1<path>` by http/doors.ts. A new door is a folder and an entry here.
 */
import type { Catalog } from '@tollgate/catalog';
import { chatDoor } from './chat/door';
import type { FrontDoor } from './door';
import { embeddingsDoor } from './embeddings/door';
import { messagesDoor } from './messages/door';
import { responsesDoor } from './responses/door';

/** The doors, for a catalog (the Messages door asks it which models reason). */
export const frontDoors = (catalog: Catalog): readonly FrontDoor[] => [
  chatDoor,
  messagesDoor(catalog),
  responsesDoor,
  embeddingsDoor,
];
