/**
 * The script-tag build (dist/cdp.js): picks up the inline stub's queue from `window.cdp`.
 * @module
 */
import { install } from './stub.js';

install(window as never);
