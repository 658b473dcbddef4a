/** Base addresses per region (docs/platform.md). A key works only against its own region. */
export const REGIONS = {
  default: 'https://api.ap3api.com',
  au: 'https://api.au.ap3api.com',
  eu: 'https://api.eu.ap3api.com',
} as const;

export type Region = keyof typeof REGIONS;

export const isRegion = (value: unknown): value is Region => typeof value === 'string' && Object.hasOwn(REGIONS, value);

/** The base address for `region`; throws `RangeError` naming the option for an unknown one. */
export function baseUrlFor(region: Region | undefined = 'default'): string {
  if (!isRegion(region)) throw new RangeError(`region must be one of ${Object.keys(REGIONS).join(', ')}; got ${JSON.stringify(region)}`);
  return REGIONS[region];
}
