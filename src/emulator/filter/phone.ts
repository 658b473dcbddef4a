/**
 * `$phn::*` operators on phone fields stored as `{c, n}`. `iis` compares whole numbers
 * (a `"+44 20…"` string or `{c, n}`), `starts` compares the leading digits of `c` + `n`,
 * `in_iso2_country_codes` takes ISO 3166 alpha-2 codes.
 */
import { checkFieldValue } from '../../api/index.js';
import type { OperatorBuilder } from './types.js';
import { badValue, fieldOf, stringList } from './util.js';

/** Calling codes of ISO alpha-2 countries (the common ones; NANP countries share 1). */
const CALLING: Record<string, string> = {
  US: '1',
  CA: '1',
  PR: '1',
  JM: '1',
  RU: '7',
  KZ: '7',
  EG: '20',
  ZA: '27',
  GR: '30',
  NL: '31',
  BE: '32',
  FR: '33',
  ES: '34',
  HU: '36',
  IT: '39',
  RO: '40',
  CH: '41',
  AT: '43',
  GB: '44',
  DK: '45',
  SE: '46',
  NO: '47',
  PL: '48',
  DE: '49',
  PE: '51',
  MX: '52',
  AR: '54',
  BR: '55',
  CL: '56',
  CO: '57',
  VE: '58',
  MY: '60',
  AU: '61',
  ID: '62',
  PH: '63',
  NZ: '64',
  SG: '65',
  TH: '66',
  JP: '81',
  KR: '82',
  VN: '84',
  CN: '86',
  TR: '90',
  IN: '91',
  PK: '92',
  LK: '94',
  IR: '98',
  MA: '212',
  DZ: '213',
  TN: '216',
  NG: '234',
  KE: '254',
  PT: '351',
  LU: '352',
  IE: '353',
  IS: '354',
  FI: '358',
  BG: '359',
  LT: '370',
  LV: '371',
  EE: '372',
  UA: '380',
  RS: '381',
  HR: '385',
  SI: '386',
  CZ: '420',
  SK: '421',
  HK: '852',
  TW: '886',
  AE: '971',
  IL: '972',
  SA: '966',
  QA: '974',
};

const digitsOf = (value: unknown): string | undefined => {
  if (typeof value !== 'object' || value === null) return undefined;
  const { c, n } = value as { c?: unknown; n?: unknown };
  return typeof c === 'string' && typeof n === 'string' ? c + n : undefined;
};

function wantedNumber(value: unknown, op: string): string {
  const input = typeof value === 'string' ? { phone: value, parse_with_country_code: true } : value;
  const checked = checkFieldValue('phn::phone', input);
  return (checked.ok && digitsOf(checked.value)) || badValue(op, 'a phone number: "+<country code> <number>" or {"c": "44", "n": "2079460000"}');
}

export const PHONE_OPERATORS: Record<string, OperatorBuilder> = {
  '$phn::iis': (c, env, op) => {
    const field = fieldOf(c, op);
    const wanted = wantedNumber(c.value, op);
    return (r) => digitsOf(env.value(r, field)) === wanted;
  },
  '$phn::iis_not': (c, env, op) => {
    const field = fieldOf(c, op);
    const wanted = wantedNumber(c.value, op);
    return (r) => digitsOf(env.value(r, field)) !== wanted;
  },
  '$phn::starts': (c, env, op) => {
    const field = fieldOf(c, op);
    const prefix = String(c.value ?? '').replace(/[^0-9]/g, '');
    if (prefix === '') badValue(op, 'leading digits, e.g. "+4420"');
    return (r) => digitsOf(env.value(r, field))?.startsWith(prefix) ?? false;
  },
  '$phn::in_iso2_country_codes': (c, env, op) => {
    const field = fieldOf(c, op);
    const codes = stringList(c.value, op).map(
      (iso) => CALLING[iso.toUpperCase()] ?? badValue(op, `ISO alpha-2 country codes; ${JSON.stringify(iso)} is not one we know`),
    );
    return (r) => {
      const phone = env.value(r, field) as { c?: string } | undefined;
      return typeof phone?.c === 'string' && codes.includes(phone.c);
    };
  },
};
