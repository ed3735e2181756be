// Error text of the users' tokens, each saying what was wrong and never echoing a token.

export const tokenRequired =
  'Authorization: Bearer <token> header required: a JWT whose sub is your user id (docs/orders-api.md, "Users and tokens")';

export const malformedAuthorization =
  'Authorization header must be "Bearer <token>", one token without spaces';

export const tokenTooLong = (length: number, max: number) =>
  `Bearer token is ${length} characters; at most ${max} are read`;

export const tokenExpired = (exp: unknown) =>
  typeof exp === 'number'
    ? `Token expired at ${new Date(exp * 1000).toISOString()}`
    : 'Token expired';

/** `detail`: jose's own words (`unexpected "iss" claim value`), which name the check. */
export const claimRejected = (claim: string, reason: string, detail: string) =>
  reason === 'missing'
    ? `Token has no ${claim} claim, which is required`
    : `Token's ${claim} claim is not accepted: ${detail}`;

export const badSignature = 'Token signature does not verify';

export const algorithmRejected = (allowed: readonly string[]) =>
  `Token algorithm is not accepted; only ${allowed.join(', ')}`;

export const malformedToken = 'Token is not a well-formed signed JWT';

export const noMatchingKey = "No key of the identity provider matches the token's kid and alg";

export const subjectInvalid =
  "Token's sub claim must be a string of 1 to 64 characters without NUL characters or unpaired surrogates";

export const rolesInvalid =
  "Token's roles claim must be an array of strings or one space-separated string";

export const keysUnavailable =
  "The identity provider's keys (AUTH_JWKS_URL) could not be fetched; try again";

export const bodyUserIdForbidden = (userId: string) =>
  `userId ${JSON.stringify(userId)} is not the token's user: only an admin creates orders for someone else`;

export const queryUserIdForbidden = (userId: string) =>
  `userId ${JSON.stringify(userId)} is not the token's user: only an admin lists someone else's orders`;

export const userIdRequired =
  'userId is required: AUTH_DISABLED=true, so no token says whose order this is';
