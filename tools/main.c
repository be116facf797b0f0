/* placeholder main, replaced below */
#include "sprig.h"
#include <stdio.h>
int main(void) { puts(sprig_status_str(SPRIG_OK)); return 0; }
