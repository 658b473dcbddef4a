/**
 * `$dtz::*` operators on date fields (`{year, month, day, …}`), at day precision in UTC.
 * The spec does not show the payloads; ours: absolute operators take a date (`"2026-11-23"`,
 * an ISO time or a date object), `absolute_between` a pair; `age_*` a number of years;
 * `relative_*` a number of days ago, or `{amount, unit: days|weeks|months|years, direction: ago|from_now}`;
 * `occurs_in*` a number of days until the next anniversary; `anniversary` matches today.
 */
import type { OperatorBuilder } from './types.js';
import { badValue, fieldOf, numberValue, rangeValue } from './util.js';

const DAY = 86_400_000;

/** Days since 1970-01-01 of a stored date, a date string, or epoch ms. */
export function dayNumber(value: unknown): number | undefined {
  if (typeof value === 'object' && value !== null && 'year' in value) {
    const { year, month, day } = value as { year: number; month: number; day: number };
    return Math.floor(Date.UTC(year, month - 1, day) / DAY);
  }
  if (typeof value === 'string') {
    const ms = Date.parse(value.length === 10 ? `${value}T00:00:00Z` : value);
    return Number.isNaN(ms) ? undefined : Math.floor(ms / DAY);
  }
  if (typeof value === 'number' && Number.isFinite(value)) return Math.floor(value / DAY);
  return undefined;
}

const dateValue = (value: unknown, op: string): number => dayNumber(value) ?? badValue(op, 'a date: "YYYY-MM-DD", an ISO time or {year, month, day}');

const parts = (day: number) => {
  const d = new Date(day * DAY);
  return { y: d.getUTCFullYear(), m: d.getUTCMonth(), d: d.getUTCDate() };
};

/** Whole years from `from` to `to` (an age). */
function yearsBetween(from: number, to: number): number {
  const a = parts(from);
  const b = parts(to);
  return b.y - a.y - (b.m < a.m || (b.m === a.m && b.d < a.d) ? 1 : 0);
}

/** Days from `today` to the next anniversary of `day` (0 = today). */
function daysToAnniversary(day: number, today: number): number {
  const a = parts(day);
  const t = parts(today);
  for (const year of [t.y, t.y + 1]) {
    const next = Math.floor(Date.UTC(year, a.m, a.d) / DAY);
    if (next >= today) return next - today;
  }
  return 366;
}

const UNIT_DAYS: Record<string, number> = { day: 1, days: 1, week: 7, weeks: 7, month: 30, months: 30, year: 365, years: 365 };

/** A relative amount in days; positive = in the past (ago), negative = from now. */
function relativeDays(value: unknown, op: string): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'object' && value !== null) {
    const { amount, unit = 'days', direction = 'ago' } = value as { amount?: unknown; unit?: unknown; direction?: unknown };
    if (typeof amount === 'number' && typeof unit === 'string' && UNIT_DAYS[unit] !== undefined && (direction === 'ago' || direction === 'from_now')) {
      return amount * UNIT_DAYS[unit]! * (direction === 'ago' ? 1 : -1);
    }
  }
  badValue(op, 'a number of days, or {"amount": n, "unit": "days|weeks|months|years", "direction": "ago|from_now"}');
}

type DayTest = (day: number, today: number, n: number) => boolean;

const build =
  (read: (value: unknown, op: string) => number, test: DayTest): OperatorBuilder =>
  (c, env, op) => {
    const field = fieldOf(c, op);
    const n = read(c.value, op);
    return (r) => {
      const day = dayNumber(env.value(r, field));
      return day !== undefined && test(day, Math.floor(env.now() / DAY), n);
    };
  };

const years = (value: unknown, op: string) => numberValue({ value }, op);
const none = () => 0;
const ago = (day: number, today: number) => today - day;
const within = (d: number, n: number) => (n >= 0 ? d >= 0 && d < n : d <= 0 && d > n);

export const DATE_OPERATORS: Record<string, OperatorBuilder> = {
  '$dtz::absolute_after': build(dateValue, (day, _t, n) => day > n),
  '$dtz::absolute_before': build(dateValue, (day, _t, n) => day < n),
  '$dtz::absolute_on': build(dateValue, (day, _t, n) => day === n),
  '$dtz::absolute_between': (c, env, op) => {
    const field = fieldOf(c, op);
    const [a, b] = rangeValue(c, op).map((v) => dateValue(v, op)) as [number, number];
    const [lo, hi] = a <= b ? [a, b] : [b, a];
    return (r) => {
      const day = dayNumber(env.value(r, field));
      return day !== undefined && day >= lo && day <= hi;
    };
  },
  '$dtz::age_exactly': build(years, (day, today, n) => yearsBetween(day, today) === n),
  '$dtz::age_less_than': build(years, (day, today, n) => yearsBetween(day, today) < n),
  '$dtz::age_more_than': build(years, (day, today, n) => yearsBetween(day, today) > n),
  '$dtz::anniversary': build(none, (day, today) => daysToAnniversary(day, today) === 0),
  '$dtz::occurs_in': build(years, (day, today, n) => daysToAnniversary(day, today) === n),
  '$dtz::occurs_in_less_than': build(years, (day, today, n) => daysToAnniversary(day, today) < n),
  '$dtz::occurs_in_more_than': build(years, (day, today, n) => daysToAnniversary(day, today) > n),
  '$dtz::relative_exactly': build(relativeDays, (day, today, n) => ago(day, today) === n),
  '$dtz::relative_less_than': build(relativeDays, (day, today, n) => within(ago(day, today), n)),
  '$dtz::relative_more_than': build(relativeDays, (day, today, n) => (n >= 0 ? ago(day, today) > n : ago(day, today) < n)),
};
