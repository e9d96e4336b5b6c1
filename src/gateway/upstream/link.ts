/** The `rel="next"` target of an RFC 8288 Link header, resolved and kept to one origin. */

/** Every link-value of a Link header: its target and its rel types (lower case). */
export function parseLinks(header: string): { target: string; rels: string[] }[] {
  const links: { target: string; rels: string[] }[] = [];
  // link-value = "<" URI-Reference ">" *( OWS ";" OWS link-param ); commas may also sit inside quoted params.
  const linkValue = /<([^>]*)>((?:\s*;\s*[!#$%&'*+.^_`|~0-9A-Za-z-]+\*?\s*(?:=\s*(?:"(?:[^"\\]|\\.)*"|[^;,\s]*))?)*)/g;
  for (const match of header.matchAll(linkValue)) {
    const params = match[2] ?? '';
    let rel: string | undefined;
    // Walk the parameters one by one, so a `rel=` inside another parameter's quoted value is not taken.
    for (const param of params.matchAll(/;\s*([^\s=;,]+)\s*(?:=\s*(?:"((?:[^"\\]|\\.)*)"|([^;,\s]*)))?/g)) {
      if (param[1]?.toLowerCase() === 'rel') {
        rel = param[2] ?? param[3] ?? '';
        break; // RFC 8288 section 3.3: occurrences after the first are ignored
      }
    }
    const rels = (rel ?? '').toLowerCase().split(/\s+/).filter(Boolean);
    links.push({ target: match[1] as string, rels });
  }
  return links;
}

export type NextLink = { readonly url: URL } | { readonly foreign: string } | undefined;

/**
 * The next page's URL, resolved against the URL that was requested (RFC 8288 section 3.2). A link
 * to another origin than `allowedOrigin` is reported as `foreign`, never followed: the request
 * would carry the API key there.
 */
export function nextLink(header: string | undefined, requestUrl: URL, allowedOrigin: string): NextLink {
  if (!header) return undefined;
  const next = parseLinks(header).find((link) => link.rels.includes('next'));
  if (next === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(next.target, requestUrl);
  } catch {
    return { foreign: 'an unreadable URL' };
  }
  return url.origin === allowedOrigin ? { url } : { foreign: url.origin };
}

/**
 * Whether `url` may be fetched as a page of `GET /pets`: exactly `<base>/pets` on the base URL's
 * origin, with no credentials or fragment. Nothing below it: `<base>/pets/{petId}` is the
 * deprecated getPet, and any other sub-path is not a page of the list.
 */
export function isPetsPageUrl(url: URL, baseUrl: URL): boolean {
  const pets = `${baseUrl.pathname.replace(/\/?$/, '/')}pets`;
  if (url.origin !== baseUrl.origin || url.username || url.password || url.hash) return false;
  return url.pathname === pets;
}
