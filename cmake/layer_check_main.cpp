// The program of the layer link checks (Note [Layers], cmake/KilnLayers.cmake): it is linked
// with the whole archive of one layer and the layers below it, and does nothing; that the link
// succeeds is the check.
int main() {
  return 0;
}
