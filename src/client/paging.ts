/**
 * Paging through `person/get` and `organizations/get`: repeat with the previous `next_offset`
 * and `cursor_id` while `has_more` is true (spec, "Paging").
 */

interface Page {
  has_more?: boolean;
  next_offset?: number;
  cursor_id?: string;
}

const NO_CURSOR = /^0+$/;

/** Yields every page of a retrieval, starting from `body` (its own offset/cursor included). */
export async function* pages<P extends Page>(fetchPage: (body: Record<string, unknown>) => Promise<P>, body: Record<string, unknown> = {}): AsyncGenerator<P> {
  let request = { ...body };
  // The platform caps pages; a bound on the loop keeps a misbehaving upstream from spinning forever.
  for (let guard = 0; guard < 1_000_000; guard++) {
    const page = await fetchPage(request);
    yield page;
    if (!page.has_more) return;
    const next: Record<string, unknown> = { ...request, offset: page.next_offset };
    if (page.cursor_id && !NO_CURSOR.test(page.cursor_id)) next['cursor_id'] = page.cursor_id;
    else delete next['cursor_id'];
    request = next;
  }
}

/** Yields every record of every page: `records` picks the array out of a page. */
export async function* records<P extends Page, R>(source: AsyncIterable<P>, pick: (page: P) => R[] | null | undefined): AsyncGenerator<R> {
  for await (const page of source) yield* pick(page) ?? [];
}
