/**
 * Audience and permission operators. `value` names the audience (`$is_member_of`,
 * `$is_subscriber_of`, …). `$is_opted_in|out` read SMS permission (globally, or within the
 * audience given as `value`). Push permission is not settable through this API, so nobody
 * is push-opted-in here (`$is_push_opted_out` matches everyone).
 */
import type { OperatorBuilder } from './types.js';
import { badValue } from './util.js';

const audienceOf = (value: unknown, op: string, optional = false): string | undefined => {
  if (typeof value === 'string' && value !== '') return value;
  if (optional && value === undefined) return undefined;
  return badValue(op, 'an audience ID');
};

const member: OperatorBuilder = (c, env, op) => {
  const audience = audienceOf(c.value, op)!;
  return (r) => env.membership?.(r, audience) !== undefined;
};

const subscriber: OperatorBuilder = (c, env, op) => {
  const audience = audienceOf(c.value, op)!;
  return (r) => {
    const m = env.membership?.(r, audience);
    return m?.subscribed === true && env.value(r, 'bol::p') === true;
  };
};

const smsOptedIn: OperatorBuilder = (c, env, op) => {
  const audience = audienceOf(c.value, op, true);
  return (r) => env.value(r, 'bol::sp') === true && (audience === undefined || env.membership?.(r, audience)?.sms_opted_in === true);
};

const not =
  (builder: OperatorBuilder): OperatorBuilder =>
  (c, env, op) => {
    const inner = builder(c, env, op);
    return (r) => !inner(r);
  };

export const AUDIENCE_OPERATORS: Record<string, OperatorBuilder> = {
  $is_member_of: member,
  $is_not_member_of: not(member),
  $is_subscriber_of: subscriber,
  $is_not_subscriber_of: not(subscriber),
  $is_opted_in: smsOptedIn,
  $is_opted_out: not(smsOptedIn),
  $is_push_opted_in: () => () => false,
  $is_push_opted_out: () => () => true,
};
