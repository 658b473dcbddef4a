export interface AllocationCount {
  /** bytes allocated on V8's heap */
  bytes: number;
  /** young-generation collections */
  scavenges: number;
  /** the other collections (mark-compacts) */
  others: number;
}

/** Starts counting this process's allocations; the function returned stops and answers them. */
export declare function countAllocations(): () => AllocationCount;
