/**
 * A request id's format (`gen-<unix seconds>-<20 alphanumerics>`, made by `newRequestId`). Alone in
 * its own module (no Node imports): the contracts validate ids with it, and the dashboard's browser
 * code type-checks those contracts.
 */
export const REQUEST_ID_PATTERN = /^gen-\d+-[A-Za-z0-9]{20}$/;
