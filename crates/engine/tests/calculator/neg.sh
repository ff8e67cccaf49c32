# neg A: prints -A
echo $((0 + $1))
