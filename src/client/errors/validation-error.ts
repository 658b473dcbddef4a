import type { ValidationIssue } from '../../api/index.js';
import { CdpError } from './cdp-error.js';

/** The request was refused before anything was sent: the body breaks the spec's shape or limits. */
export class ValidationError extends CdpError {
  override name = 'ValidationError' as const;
  readonly endpoint: string;
  readonly issues: ValidationIssue[];

  constructor(endpoint: string, issues: ValidationIssue[]) {
    const shown = issues
      .slice(0, 5)
      .map((issue) => issue.message)
      .join('; ');
    super(`Invalid ${endpoint} request (nothing was sent): ${shown}${issues.length > 5 ? `; and ${issues.length - 5} more` : ''}`);
    this.endpoint = endpoint;
    this.issues = issues;
  }
}
