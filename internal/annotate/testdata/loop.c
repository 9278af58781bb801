/* What loop.s does. */
void _start(void)
{
	int sum = 0, i = 1000;
	do {
		sum += i;
	} while (--i);
	exit(0);
}
