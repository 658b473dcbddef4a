'use client';
import { useIdentify, usePageViews } from 'cdp-edge/react';
import { usePathname } from 'next/navigation';

export function Tracking({ user, userHash }) {
  usePageViews(usePathname());
  useIdentify(user, userHash);
  return null;
}
