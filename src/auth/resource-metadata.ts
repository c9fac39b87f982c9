/**
 * OAuth 2.0 Protected Resource Metadata (RFC 9728) for the gateway as an MCP server: the resource URI,
 * the authorization servers that issue tokens for it, the scopes it knows, and that tokens go in the
 * `Authorization` header. Served at `/.well-known/oauth-protected-resource` and at the form with the
 * endpoint's path appended, which is what a 401's `resource_metadata` names.
 */
const WELL_KNOWN = '/.well-known/oauth-protected-resource';

/** Where the metadata of `resource` is: the well-known path with the resource's path appended (RFC 9728 §3.1). */
export function resourceMetadataUrl(resource: string): string {
  const url = new URL(resource);
  const path = url.pathname.replace(/\/+$/, '');
  return `${url.origin}${WELL_KNOWN}${path}`;
}

/** The paths the metadata is served at, for the endpoint paths given. */
export function resourceMetadataPaths(endpointPaths: readonly string[]): string[] {
  return [WELL_KNOWN, ...endpointPaths.map((p) => `${WELL_KNOWN}${p.replace(/\/+$/, '')}`)].filter((p, i, all) => all.indexOf(p) === i);
}

export interface MetadataSettings {
  readonly resource: string;
  readonly authorizationServers: readonly { readonly issuer: string }[];
  readonly requiredScopes: readonly string[];
  /** Scopes announced (default: the required ones). */
  readonly scopesSupported?: readonly string[] | undefined;
}

export function resourceMetadata(oauth: MetadataSettings): Record<string, unknown> {
  return {
    resource: oauth.resource,
    authorization_servers: oauth.authorizationServers.map((s) => s.issuer),
    scopes_supported: [...(oauth.scopesSupported ?? oauth.requiredScopes)],
    bearer_methods_supported: ['header'],
    resource_name: 'mcp-mrtr-gateway',
  };
}
